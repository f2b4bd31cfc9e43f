import type { Command } from 'commander';

/**
 * Examples shown at the end of `fathom <cmd> --help`, keyed by the command's path (`gpu parse`).
 * A command either has an entry here or adds its own `Examples:` section (report, compare,
 * shadow gateway): help-examples.spec.ts walks the registered commands and fails on one with neither,
 * so a new command cannot ship without examples.
 */
export const HELP_EXAMPLES: Record<string, string[]> = {
  sim: [
    'fathom sim                                  # OpenAI-compatible target on http://127.0.0.1:8000/v1',
    'fathom sim --port 0 --config faults.yaml    # an ephemeral port, with the faults of faults.yaml',
  ],
  up: [
    'fathom up --sim                             # API on :7070 and the simulated target on :8000',
    'fathom up --memory --port 7171              # nothing kept on disk',
    'fathom up --demo                            # one demo campaign against the simulated target, then exit',
  ],
  run: [
    'fathom run examples/chat-smoke.yaml',
    'fathom run examples/chat-smoke.yaml --target http://127.0.0.1:8000/v1 --concurrency 32 --duration 30s',
    'fathom run examples/chat-smoke.yaml --rate 20          # 20 requests/s (constant-rate) instead of closed users',
    'fathom run examples/chat-smoke.yaml --api http://127.0.0.1:7070 --json > run.json',
    'fathom run examples/chat-smoke.yaml --quiet           # no live progress, only the summary',
  ],
  validate: [
    'fathom validate examples/chat-smoke.yaml    # exit 0 when valid, 2 with every bad field',
    'for f in examples/*.yaml; do fathom validate "$f" || exit 1; done',
  ],
  shadow: ['fathom shadow gateway --listen 127.0.0.1:9090 --campaign 7f3c... --primary http://10.0.0.5:8000'],
  data: ['fathom data build corpus.txt --out prompts.jsonl'],
  'data build': [
    'fathom data build corpus.txt --out prompts.jsonl --report build-report.json',
    'fathom data build faq.txt --out faq.jsonl --seed 7 --min-words 6 --no-embeddings',
  ],
  probe: ['fathom probe parse-sse recording.sse'],
  'probe parse-sse': [
    'fathom probe parse-sse recording.sse',
    'curl -sN http://127.0.0.1:8000/v1/chat/completions -d @req.json | fathom probe parse-sse -',
  ],
  gpu: ['fathom gpu parse dcgm.prom'],
  'gpu parse': [
    'fathom gpu parse dcgm.prom',
    'nvidia-smi -q -x | fathom gpu parse - --format nvidia-smi-xml',
    'curl -s http://127.0.0.1:8000/metrics | fathom gpu parse -',
  ],
};

/** The command's path below the program, e.g. `gpu parse`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Every command below `program`, depth first. */
export function allCommands(program: Command): Command[] {
  return program.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** Adds an `Examples:` section to the help of every command that has examples. */
export function addHelpExamples(program: Command): void {
  for (const command of allCommands(program)) {
    const examples = HELP_EXAMPLES[commandPath(command)];
    if (examples)
      command.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n`);
  }
  program.addHelpText(
    'after',
    `\nExamples:\n  $ fathom up --sim\n  $ fathom validate examples/chat-smoke.yaml\n  $ fathom run examples/chat-smoke.yaml --duration 30s\n  $ fathom <command> --help   # examples for each command\n`,
  );
}
