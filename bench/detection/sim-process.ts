import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FaultSpecInput } from '@fathom/sim';

/** A simulator in its own process: its URL, a way to plant a fault, and its stop. */
export interface SimProcess {
  readonly url: string;
  setFault(fault: FaultSpecInput): Promise<void>;
  close(): Promise<void>;
}

const ROOT = join(__dirname, '..', '..');
const BUILT = join(ROOT, 'dist', 'apps', 'sim-target', 'src', 'main.js');

/**
 * Starts `apps/sim-target` in a child process (the built one when `npm run build` made it, else
 * from the sources). In the bench's own process the simulator's event loop was the one Fathom's
 * four services share: at 32 streams and more it was starved, admitted requests late and
 * reported empty batches, so runs past its knee measured that, not a saturated server.
 */
export async function startSimProcess(config: Record<string, unknown>): Promise<SimProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'fathom-detection-sim-'));
  const configPath = join(dir, 'sim.json');
  writeFileSync(configPath, JSON.stringify(config)); // JSON is YAML
  const argv = existsSync(BUILT)
    ? [BUILT]
    : ['-r', join(ROOT, 'bench', 'ts-register.js'), join(ROOT, 'apps', 'sim-target', 'src', 'main.ts')];
  const child = spawn(process.execPath, argv, {
    env: {
      ...process.env,
      PORT: process.env.FATHOM_BENCH_SIM_PORT ?? '0',
      HOST: '127.0.0.1',
      SIM_CONFIG: configPath,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`simulator exited ${code}: ${stderr.slice(0, 2000)}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url,
    async setFault(fault) {
      const answer = await fetch(`${url}/sim/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(fault),
      });
      if (answer.status !== 200)
        throw new Error(`simulator refused ${JSON.stringify(fault)}: ${await answer.text()}`);
    },
    async close() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
