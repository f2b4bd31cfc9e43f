import type { Command } from 'commander';

/**
 * Every subcommand registers itself here, one file each (`<name>.command.ts` exporting
 * `register<Name>Command(program)`).
 */
export function registerCommands(program: Command): void {
  void program;
}
