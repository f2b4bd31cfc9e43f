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

/** Header values: plain text, or a reference for a credential header. */
export const HeadersSchema = z.record(z.string(), SecretSchema);
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
