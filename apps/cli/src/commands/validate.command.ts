import type { Command } from 'commander';
import { CliExit } from '../cli-exit';

/**
 * `fathom validate FILE`: checks a campaign file without running it. Exit 0 with a one-line
 * description of the campaign; exit 2 with every bad field by its dotted path (the same issues
 * `fathom run` and `POST /v1/campaigns` report), or the line and column of a syntax error.
 */
export function registerValidateCommand(program: Command): void {
  program
    .command('validate')
    .description('check a campaign file (every bad field by its path) without running it')
    .argument('<file>', 'campaign file (YAML or JSON)')
    .action(async (file: string) => {
      const { readCampaignFile } = await import('./campaign-file');
      const input = await readCampaignFile(file);
      const { CampaignValidationError, parseCampaign } = await import('@fathom/contracts');
      try {
        const spec = parseCampaign(input);
        const profile = spec.load.profile?.type ?? 'closed';
        process.stdout.write(
          `${file}: valid campaign '${spec.name}' (scenario ${spec.scenario.type}, profile ${profile}, ` +
            `concurrency ${spec.load.concurrency}, ${spec.load.durationMs / 1000} s against ${spec.target.baseUrl})\n`,
        );
      } catch (error) {
        if (!(error instanceof CampaignValidationError)) throw error;
        const lines = error.issues.map((i) => `  ${i.field}: ${i.message}`);
        throw new CliExit(2, `${file}: ${error.issues.length} invalid field(s)\n${lines.join('\n')}`);
      }
    });
}
