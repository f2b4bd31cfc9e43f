import type { CampaignSpec } from '@fathom/contracts';
import type { DriverOutcome } from '../driver/request-outcome';
import { runShard } from '../engine/run-shard';

/**
 * Shard `shard` (the only one by default) of the timing check's campaign for `durationMs`, records and windows dropped; `tap`
 * sees every finished request with its send stamp (this thread's performance.now()).
 */
export function runTimingShard(
  spec: CampaignSpec,
  durationMs: number,
  tap?: (id: string, outcome: DriverOutcome, sentMono: number) => void,
  shard: { index: number; count: number } = { index: 0, count: 1 },
): ReturnType<typeof runShard> {
  return runShard({
    spec: { ...spec, load: { ...spec.load, durationMs } },
    shard,
    runId: 'sim-accuracy',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: () => undefined, window: () => undefined },
    signal: new AbortController().signal,
    ...(tap ? { tap } : {}),
  });
}
