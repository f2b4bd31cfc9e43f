import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { registerCommands, registerShadowStandIn, shadowRegistrar } from '.';
import { registerShadowCommand } from './shadow.command';

const ROOT = join(__dirname, '..', '..', '..', '..');
const TS_REGISTER = join(ROOT, 'libs', 'testing', 'src', 'ts-register.js');

/** What a fresh process has required once it has registered every command, as `fathom --version` does. */
async function modulesLoadedByRegistering(): Promise<string[]> {
  const script = `
    const { Command } = require('commander');
    const { registerCommands, shadowRegistrar } = require(${JSON.stringify(join(__dirname, 'index.ts'))});
    shadowRegistrar(['--version']).then((registerShadow) => {
      registerCommands(new Command('fathom'), registerShadow);
      process.stdout.write(JSON.stringify(Object.keys(require.cache)));
    });`;
  const { stdout } = await promisify(execFile)(process.execPath, ['-r', TS_REGISTER, '-e', script], {
    cwd: ROOT,
    timeout: 60_000,
  });
  return JSON.parse(stdout) as string[];
}

function topLevelHelp(registerShadow: (program: Command) => void): string {
  const program = new Command('fathom');
  registerCommands(program, registerShadow);
  return program.helpInformation();
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

  it('lists shadow in `fathom --help` as the real command would', () => {
    expect(topLevelHelp(registerShadowStandIn)).toBe(topLevelHelp(registerShadowCommand));
  });

  it.each([
    [['shadow', 'gateway', '--campaign', 'x'], registerShadowCommand],
    [['help', 'shadow'], registerShadowCommand],
    [['--version'], registerShadowStandIn],
    [['report', 'run-1', '--shadow', '--out', 'html=x.html'], registerShadowStandIn],
  ])('registers shadow for %j with the command that can run it', async (args, expected) => {
    expect(await shadowRegistrar(args)).toBe(expected);
  });
});
