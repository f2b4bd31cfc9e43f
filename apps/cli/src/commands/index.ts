import type { Command } from 'commander';
import { registerUpCommand } from './up.command';
import { registerRunCommand } from './run.command';
import { registerProbeCommand } from './probe.command';

/**
 * Every subcommand registers itself here, one file each (`<name>.command.ts` exporting
 * `register<Name>Command(program)`).
 */
export function registerCommands(program: Command): void {
  registerUpCommand(program);
  registerRunCommand(program);
  registerProbeCommand(program);
}
