import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

export interface ServiceProcess {
  readonly name: string;
  readonly url: string;
  readonly child: ChildProcess;
  output(): string;
  /** SIGKILL: no shutdown hook runs, no offset is committed on the way out. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts `dist/apps/<name>/src/main.js` as its own process and resolves once it logged the
 * address it listens on. The build (`npm run build`) must be current: `npm test` builds first.
 */
export async function startServiceProcess(
  name: string,
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'apps', name, 'src', 'main.js')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // A service that never came up is not left running (nothing else holds its handle).
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start in ${timeoutMs} ms:\n${log}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      log += chunk.toString('utf8');
      const match = /listening on (http:\/\/[\d.]+:\d+)/.exec(log);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before listening:\n${log}`));
    });
  });
  const signal = async (sig: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(sig);
    await exited;
  };
  return {
    name,
    url,
    child,
    output: () => log,
    kill: () => signal('SIGKILL'),
    stop: async () => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await signal('SIGTERM');
      clearTimeout(timer);
    },
  };
}
