import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// bin/ is plain CommonJS, run by node before anything is compiled.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { relaunchEnv } = require('../../../bin/malloc-arenas') as {
  relaunchEnv(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): NodeJS.ProcessEnv | null;
};

const MODULE = join(__dirname, '..', '..', '..', 'bin', 'malloc-arenas.js');

/** A script that starts itself again as bin/fathom.js does, then prints its env's cap and exits with `code`. */
function run(
  code: number,
  env: NodeJS.ProcessEnv,
): Promise<{ out: string; code: number | null; pid: number | undefined }> {
  const dir = mkdtempSync(join(tmpdir(), 'fathom-arenas-'));
  const script = join(dir, 'cli.js');
  writeFileSync(
    script,
    `const { relaunch, relaunchEnv } = require(${JSON.stringify(MODULE)});
     const env = relaunchEnv(process.env, process.platform);
     if (env !== null) relaunch(env);
     else { console.log('pid ' + process.pid + ' MALLOC_ARENA_MAX=' + process.env.MALLOC_ARENA_MAX); process.exit(${code}); }`,
  );
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (exitCode) => {
      rmSync(dir, { recursive: true, force: true });
      resolve({ out, code: exitCode, pid: child.pid });
    });
  });
}

describe('bin/malloc-arenas', () => {
  const { MALLOC_ARENA_MAX: _unset, ...bare } = process.env;

  it('caps the arenas on Linux unless the variable is set already', () => {
    expect(relaunchEnv({ PATH: '/bin' }, 'linux')).toEqual({ PATH: '/bin', MALLOC_ARENA_MAX: '2' });
    expect(relaunchEnv({ MALLOC_ARENA_MAX: '8' }, 'linux')).toBeNull();
    expect(relaunchEnv({}, 'darwin')).toBeNull();
    expect(relaunchEnv({}, 'win32')).toBeNull();
  });

  it('starts the command again once, with the cap, and ends with its exit code', async () => {
    if (process.platform !== 'linux') return;

    const sut = await run(3, bare);

    expect(sut.out).toMatch(/^pid \d+ MALLOC_ARENA_MAX=2\n$/);
    expect(sut.out).not.toContain(`pid ${sut.pid} `);
    expect(sut.code).toBe(3);
  });

  it("leaves a user's own setting alone and does not start again", async () => {
    const sut = await run(0, { ...bare, MALLOC_ARENA_MAX: '4' });

    expect(sut.out).toBe(`pid ${sut.pid} MALLOC_ARENA_MAX=4\n`);
    expect(sut.code).toBe(0);
  });
});
