import type { RunShardCommand } from './events/run.event';
import { SHARD_COMMAND_GRACE_MS, isStaleShardCommand } from './shard-command.util';

const command = { emittedAt: 1_000, spec: { load: { durationMs: 10_000 } } } as RunShardCommand;

describe(isStaleShardCommand.name, () => {
  it('keeps a command until its run should have ended, plus the grace', () => {
    expect(isStaleShardCommand(command, 1_000 + 10_000 + SHARD_COMMAND_GRACE_MS)).toBe(false);
  });

  it('skips a command for a run that should long have ended', () => {
    expect(isStaleShardCommand(command, 1_000 + 10_000 + SHARD_COMMAND_GRACE_MS + 1)).toBe(true);
  });
});
