/** SQLSTATE of a unique-constraint violation. */
export const UNIQUE_VIOLATION = '23505';

/** The `code` of an error: the SQLSTATE for pg and PGlite errors, Node's code for system errors. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
