import type { Command } from 'commander';
import { registerProbeCommand } from './probe.command';

/**
 * Every subcommand registers itself here, one file each (`<name>.command.ts` exporting
 * `register<Name>Command(program)`).
 */
export function registerCommands(program: Command): void {
  registerProbeCommand(program);
}
