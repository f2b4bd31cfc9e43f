import { spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * Starts the simulated target in a child process; `close` ends it. `cpu` pins it to that core
 * with taskset (timing measurements keep the target and the client off each other's core).
 */
export async function startSimProcess(
  config: unknown,
  options: { cpu?: number } = {},
): Promise<{ url: string; close: () => Promise<void> }> {
  const args = [join(__dirname, 'sim-process.fixture.js'), JSON.stringify(config)];
  const pinned = options.cpu !== undefined;
  const child = spawn(
    pinned ? 'taskset' : process.execPath,
    pinned ? ['-c', String(options.cpu), process.execPath, ...args] : args,
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.indexOf('\n');
      if (line !== -1) resolve(JSON.parse(out.slice(0, line)).url);
    });
    child.on('exit', (code) => reject(new Error(`sim exited with ${code}`)));
  });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        child.on('exit', () => resolve());
        child.stdin.end();
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      }),
  };
}
