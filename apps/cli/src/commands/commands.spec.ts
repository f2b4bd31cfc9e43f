import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..', '..', '..');
const TS_REGISTER = join(ROOT, 'libs', 'testing', 'src', 'ts-register.js');

/** What a fresh process has required once it has registered every command, as `fathom --version` does. */
async function modulesLoadedByRegistering(): Promise<string[]> {
  const script = `
    const { Command } = require('commander');
    const { registerCommands } = require(${JSON.stringify(join(__dirname, 'index.ts'))});
    registerCommands(new Command('fathom'));
    process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['-r', TS_REGISTER, '-e', script], {
    cwd: ROOT,
    timeout: 60_000,
  });
  return JSON.parse(stdout) as string[];
}

describe('registering the commands', () => {
  jest.setTimeout(60_000);

  it('loads no library: each command loads its own when it runs', async () => {
    const loaded = await modulesLoadedByRegistering();
    expect(loaded).toContain(join(__dirname, 'run.command.ts'));
    const heavy = ['@nestjs/core', 'kafkajs', '@electric-sql/pglite', 'onnxruntime-node', 'undici'];
    expect(loaded.filter((path) => heavy.some((name) => path.includes(`/node_modules/${name}/`)))).toEqual(
      [],
    );
    expect(loaded.filter((path) => path.startsWith(join(ROOT, 'libs')) && path !== TS_REGISTER)).toEqual([]);
  });
});
