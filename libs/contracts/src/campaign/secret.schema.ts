import { z } from 'zod';

/**
 * Environment variables a secret reference may name: only these, so a campaign cannot send an
 * arbitrary variable of the load-generator (DATABASE_URL, a cloud key) to a target it chose.
 */
export const SECRET_ENV_PREFIX = 'FATHOM_SECRET_';

/**
 * A secret given by reference, resolved by the service that sends it (the load-generator; the
 * orchestrator for shadow targets) right before use: `{ env: "FATHOM_SECRET_OPENAI" }` reads
 * that variable, `{ file: "openai" }` a file in FATHOM_SECRETS_DIR. Campaigns are stored,
 * published and answered with the reference only, never the value.
 */
export const SecretRefSchema = z.union([
  z
    .object({
      env: z
        .string()
        .regex(/^FATHOM_SECRET_[A-Z0-9_]+$/, `an environment variable named ${SECRET_ENV_PREFIX}<NAME>`),
    })
    .strict(),
  z.object({ file: z.string().min(1).max(255) }).strict(),
]);
export type SecretRef = z.infer<typeof SecretRefSchema>;

/** A credential: by reference, or (only until the load-generator resolved it) its value. */
export const SecretSchema = z.union([z.string(), SecretRefSchema]);
export type Secret = z.infer<typeof SecretSchema>;

/** RFC 9110 field names: tokens, as Node and undici check them. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/**
 * Fields of the connection, not of the request: the client sets them from the body and the
 * connection, and undici refuses a request that sets one of them itself. Before this check a
 * step with `Expect` (or a bad name, or a line break in a value) failed its first requests and
 * then stalled undici's connection pool: the run never ended.
 */
const CONNECTION_HEADERS = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'expect',
  'content-length',
]);

/** Why a header cannot be sent as given (null: it can); for values resolved at run time too. */
export function headerProblem(name: string, value: string | null): string | null {
  if (!HEADER_NAME.test(name))
    return `header name ${JSON.stringify(name)} is not an HTTP token (letters, digits, !#$%&'*+.^_\`|~-)`;
  if (CONNECTION_HEADERS.has(name.toLowerCase()))
    return `header ${name} is the connection's: Fathom's HTTP client sets it (${[...CONNECTION_HEADERS].join(', ')} cannot be given)`;
  if (value !== null && /[\r\n\0]/.test(value)) return `header ${name}: the value holds a line break or NUL`;
  return null;
}

/**
 * A path Fathom appends to the target's origin: no spaces or control characters, which undici
 * refuses (and a run of refused requests stalled its connection pool: the run never ended).
 */
export const RequestPathSchema = z
  .string()
  .startsWith('/')
  .regex(/^[^\s\u0000-\u001f\u007f]*$/, 'must hold no spaces or control characters (percent-encode them)');

/** Header values: plain text, or a reference for a credential header. */
export const HeadersSchema = z.record(z.string(), SecretSchema).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    const problem = headerProblem(name, typeof value === 'string' ? value : null);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: [name] });
  }
});
export type Headers = z.infer<typeof HeadersSchema>;

const CREDENTIAL_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-api-key',
  'api-key',
  'x-auth-token',
  'x-access-token',
]);

/** Whether a header carries a credential: its value may only be given by reference. */
export function isCredentialHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    CREDENTIAL_HEADERS.has(lower) || /(auth|token|secret|api[-_]?key|password|session|cookie)/.test(lower)
  );
}

export function isSecretRef(value: unknown): value is SecretRef {
  return typeof value === 'object' && value !== null && ('env' in value || 'file' in value);
}

/**
 * The text of a secret the load-generator resolved. A reference still here is a bug upstream
 * (the shard was started without resolving): refused, never sent as `[object Object]`.
 */
export function secretText(value: Secret): string;
export function secretText(value: Secret | undefined): string | undefined;
export function secretText(value: Secret | undefined): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  throw new Error('a secret reference was not resolved before use');
}

/** Header values as text (see `secretText`). */
export function headerTexts(headers: Headers): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, secretText(value)]));
}
