import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CliExit } from '../cli-exit';

/** `fathom sim [--config FILE] [--port N] [--host H]`: runs the simulated target until SIGINT/SIGTERM. */
export function registerSimCommand(program: Command): void {
  program
    .command('sim')
    .description('Run the simulated AI target (OpenAI API, RAG, tools, agents, faults, ground truth)')
    .option('--config <file>', 'YAML or JSON config (see libs/sim/README.md)')
    .option('--port <n>', 'port to listen on', '8000')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .action(async (options: { config?: string; port: string; host: string }) => {
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new CliExit(2, `fathom sim: invalid --port '${options.port}'`);
      let config: unknown = {};
      if (options.config) {
        const { parse: parseYaml } = await import('yaml');
        try {
          config = parseYaml(readFileSync(options.config, 'utf8')) ?? {};
        } catch (error) {
          throw new CliExit(
            2,
            `fathom sim: cannot read ${options.config}: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }
      const { startSimTarget } = await import('@fathom/sim');
      let sim;
      try {
        sim = await startSimTarget({ port, host: options.host, config: config as never });
      } catch (error) {
        throw new CliExit(1, `fathom sim: ${error instanceof Error ? error.message : String(error)}`);
      }
      process.stdout.write(`fathom sim listening on ${sim.url}\n`);
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          void sim.close().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
