import { readFile } from 'node:fs/promises';
import { isSecretRef, SECRET_ENV_PREFIX, type SecretRef } from '@fathom/contracts';
import { confinedPath, FileAccessError } from '../files/confined-path';
import { replaceFields, secretFields } from './secret.walk';

/** Where references are looked up: this process's environment and FATHOM_SECRETS_DIR. */
export interface SecretSources {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** null: `{ file }` references are refused. */
  readonly secretsDir: string | null;
}

/** A reference that cannot be resolved here; names the field and the reference, never a value. */
export class SecretResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretResolutionError';
  }
}

/** The FATHOM_SECRET_* variables of `env`: the only ones a reference may name. */
export function secretEnvOf(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (e): e is [string, string] => e[0].startsWith(SECRET_ENV_PREFIX) && e[1] !== undefined,
    ),
  );
}

/**
 * Every secret is sent in a header (an API key, a credential header): surrounding whitespace
 * (a file's or a variable's trailing newline) is dropped, and a line break or NUL inside is
 * refused. Before, such a value made every request fail (undici refuses it, and its pool then
 * stalled: the run never ended) or, in the own HTTP/1.1 client, wrote a header of its own.
 */
function headerSafe(value: string, field: string): string {
  if (/[\r\n\0]/.test(value))
    throw new SecretResolutionError(
      `${field}: the secret holds a line break or NUL inside; it is sent in a header`,
    );
  return value;
}

export async function resolveSecretRef(
  ref: SecretRef,
  sources: SecretSources,
  field: string,
): Promise<string> {
  if ('env' in ref) {
    if (!ref.env.startsWith(SECRET_ENV_PREFIX))
      throw new SecretResolutionError(`${field}: only ${SECRET_ENV_PREFIX}* variables can be referenced`);
    const value = sources.env[ref.env]?.trim();
    if (value === undefined || value === '')
      throw new SecretResolutionError(`${field}: ${ref.env} is not set where the requests are sent from`);
    return headerSafe(value, field);
  }
  let value: string;
  try {
    const path = await confinedPath(ref.file, sources.secretsDir, `${field} (secret file)`);
    value = (await readFile(path, 'utf8')).trim();
  } catch (error) {
    if (error instanceof FileAccessError) throw new SecretResolutionError(error.message);
    throw new SecretResolutionError(`${field}: the secret file cannot be read`);
  }
  return headerSafe(value, field);
}

/**
 * `spec` with every secret reference replaced by its value, for the process that sends the
 * requests; the copy lives in memory only (never published or stored).
 */
export async function resolveSecrets<T>(spec: T, sources: SecretSources): Promise<T> {
  const values = new Map<string, string>();
  for (const { field, value } of secretFields(spec)) {
    if (isSecretRef(value)) values.set(field, await resolveSecretRef(value, sources, field));
  }
  return values.size === 0 ? spec : replaceFields(spec, values);
}

/** Fields that hold a credential's value rather than a reference (refused over the API). */
export function plainSecretFields(spec: unknown): string[] {
  return secretFields(spec)
    .filter(({ value }) => typeof value === 'string')
    .map(({ field }) => field);
}

let stashed = 0;

/**
 * For the CLI, whose services run in its own process: each credential of `spec` (a value, any
 * variable of the user's environment, any file of theirs) moves into a FATHOM_SECRET_CLI_<n>
 * variable of this process, and the spec keeps only the reference, so what is stored in the
 * embedded database and published on its bus holds no secret either.
 */
export async function stashSecrets<T>(spec: T, env: NodeJS.ProcessEnv): Promise<T> {
  const refs = new Map<string, { env: string }>();
  for (const { field, value } of secretFields(spec)) {
    let text: string;
    if (typeof value === 'string') text = value;
    else if ('env' in value) {
      const found = env[value.env];
      if (found === undefined) throw new SecretResolutionError(`${field}: ${value.env} is not set`);
      text = found;
    } else {
      text = (
        await readFile(value.file, 'utf8').catch(() => {
          throw new SecretResolutionError(`${field}: cannot read the secret file ${value.file}`);
        })
      ).trim();
    }
    const name = `${SECRET_ENV_PREFIX}CLI_${process.pid}_${++stashed}`;
    env[name] = text;
    refs.set(field, { env: name });
  }
  return refs.size === 0 ? spec : replaceFields(spec, refs);
}
