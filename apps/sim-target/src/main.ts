import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { startSimTarget } from '@fathom/sim';

/** sim-target service: the same server as `fathom sim`, configured from env (PORT, HOST, SIM_CONFIG). */
async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 8000);
  const config = process.env.SIM_CONFIG
    ? (parseYaml(readFileSync(process.env.SIM_CONFIG, 'utf8')) ?? {})
    : {};
  const sim = await startSimTarget({ port, host: process.env.HOST ?? '0.0.0.0', config });
  process.stdout.write(`sim-target listening on ${sim.url}\n`);
  const stop = (): void => {
    void sim.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`sim-target: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
