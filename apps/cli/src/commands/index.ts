import type { Command } from 'commander';
import { registerUpCommand } from './up.command';
import { registerRunCommand } from './run.command';
import { registerProbeCommand } from './probe.command';
import { registerSimCommand } from './sim.command';
import { registerGpuCommand } from './gpu.command';
import { registerReportCommand } from './report.command';
import { registerCompareCommand } from './compare.command';
import { registerShadowCommand } from './shadow.command';
import { registerDataCommand } from './data.command';

/**
 * Every subcommand registers itself here, one file each (`<name>.command.ts` exporting
 * `register<Name>Command(program)`).
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
}
