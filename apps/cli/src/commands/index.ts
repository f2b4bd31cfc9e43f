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
import { registerShadowCommand } from './shadow.command';
import { addHelpExamples } from './help-examples';

/**
 * Every subcommand registers itself here, one file each (`<name>.command.ts` exporting
 * `register<Name>Command(program)`), and its examples in help-examples.ts. Registering loads
 * no library: each command loads what it needs when it runs (`await import(...)`), so
 * `fathom --version` and `fathom --help` stay fast (commands.spec.ts checks it).
 */
export function registerCommands(program: Command): void {
  registerSimCommand(program);
  registerUpCommand(program);
  registerRunCommand(program);
  registerProbeCommand(program);
  registerGpuCommand(program);
  registerReportCommand(program);
  registerCompareCommand(program);
  registerShadowCommand(program);
  registerDataCommand(program);
  registerValidateCommand(program);
  addHelpExamples(program);
}
