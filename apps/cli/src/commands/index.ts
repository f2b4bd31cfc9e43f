import type { Command } from 'commander';
import { registerUpCommand } from './up.command';
import { registerRunCommand } from './run.command';
import { registerProbeCommand } from './probe.command';
import { registerSimCommand } from './sim.command';
import { registerGpuCommand } from './gpu.command';
import { registerReportCommand } from './report.command';
import { registerCompareCommand } from './compare.command';
import { registerDataCommand } from './data.command';
import { registerValidateCommand } from './validate.command';
import { addHelpExamples } from './help-examples';

type Registrar = (program: Command) => void;

/**
 * `shadow` as `fathom --help` lists it, without its subcommands: shadow.command.ts loads the
 * orchestrator (NestJS, kafkajs, PGlite) when required, so it is required only when the
 * arguments name `shadow` (shadowRegistrar). commands.spec.ts holds the two listings equal.
 */
export const registerShadowStandIn: Registrar = (program) => {
  program.command('shadow').description('Shadow testing from live traffic');
};

/**
 * What registers `shadow` for these arguments (`process.argv.slice(2)`): the real command when
 * one of them is `shadow` (`fathom shadow ...`, `fathom help shadow`), the stand-in otherwise;
 * nothing reaches the shadow command without naming it.
 */
export async function shadowRegistrar(args: readonly string[]): Promise<Registrar> {
  if (!args.includes('shadow')) return registerShadowStandIn;
  const { registerShadowCommand } = await import('./shadow.command');
  return registerShadowCommand;
}

/**
 * Every subcommand registers itself here, one file each (`<name>.command.ts` exporting
 * `register<Name>Command(program)`), and its examples in help-examples.ts. Registering loads
 * no library: each command loads what it needs when it runs (`await import(...)`), so
 * `fathom --version` and `fathom --help` stay fast (commands.spec.ts checks it).
 */
export function registerCommands(program: Command, registerShadow: Registrar = registerShadowStandIn): void {
  registerSimCommand(program);
  registerUpCommand(program);
  registerRunCommand(program);
  registerProbeCommand(program);
  registerGpuCommand(program);
  registerReportCommand(program);
  registerCompareCommand(program);
  registerShadow(program);
  registerDataCommand(program);
  registerValidateCommand(program);
  addHelpExamples(program);
}
