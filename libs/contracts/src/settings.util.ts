import type { z } from 'zod';

/**
 * Validates a service's settings from an environment-shaped record (libs/runtime passes
 * `process.env`; tests pass their own). A bad value stops the process at boot with a message
 * that names the variable, instead of surfacing as a strange failure later.
 */
export function parseSettings<S extends z.ZodType>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
  service: string,
): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid ${service} settings: ${issues}`);
  }
  return parsed.data;
}
