/** A named readiness check a module contributes to `/health`. */
export interface HealthCheck {
  readonly name: string;
  check(): Promise<{ ok: boolean; detail?: string }>;
}

export interface HealthReport {
  status: 'ok' | 'degraded';
  services: string[];
  checks: Record<string, { ok: boolean; detail?: string }>;
}

export async function runHealthChecks(
  services: string[],
  checks: readonly HealthCheck[],
): Promise<HealthReport> {
  const results: HealthReport['checks'] = {};
  await Promise.all(
    checks.map(async (c) => {
      try {
        results[c.name] = await c.check();
      } catch (error) {
        results[c.name] = { ok: false, detail: error instanceof Error ? error.message : String(error) };
      }
    }),
  );
  const ok = Object.values(results).every((r) => r.ok);
  return { status: ok ? 'ok' : 'degraded', services, checks: results };
}
