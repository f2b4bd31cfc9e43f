import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * The workspace's one TypeScript bootstrap (libs/testing/src/ts-register.js), for a worker from
 * source (jest, the benches): a worker thread cannot load a .ts entry by itself. Built (dist/),
 * the entry is the compiled .js and no bootstrap runs.
 */
const TS_REGISTER = join(__dirname, '..', '..', 'testing', 'src', 'ts-register.js');

/**
 * Starts the worker thread whose entry is `<dir>/<name>.js` when built, or `<dir>/<name>.ts`
 * through the TypeScript bootstrap when run from source. Throws when a source entry has no
 * bootstrap to compile it. The thread is not unref'd: that is the caller's choice.
 */
export function startWorkerThread(dir: string, name: string, workerData?: unknown): Worker {
  const compiled = __filename.endsWith('.js');
  const entry = join(dir, `${name}.${compiled ? 'js' : 'ts'}`);
  if (compiled) return new Worker(entry, { workerData });
  if (!existsSync(TS_REGISTER)) throw new Error(`no ${TS_REGISTER} to compile ${name} from source`);
  return new Worker(`require(${JSON.stringify(TS_REGISTER)}); require(${JSON.stringify(entry)});`, {
    eval: true,
    workerData,
  });
}

/** Delay before restart n (1-based) of a worker thread that died: 1 s doubling, at most 30 s. */
export function defaultRestartBackoffMs(consecutiveDeaths: number): number {
  return Math.min(1000 * 2 ** (consecutiveDeaths - 1), 30_000);
}
