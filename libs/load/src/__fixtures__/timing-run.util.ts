import type { CampaignSpec } from '@fathom/contracts';
import type { DriverOutcome } from '../driver/request-outcome';
import { runShard } from '../engine/run-shard';

/**
 * One shard of the timing check's campaign for `durationMs`, records and windows dropped; `tap`
 * sees every finished request with its send stamp (this thread's performance.now()).
 */
export function runTimingShard(
  spec: CampaignSpec,
  durationMs: number,
  tap?: (id: string, outcome: DriverOutcome, sentMono: number) => void,
): ReturnType<typeof runShard> {
  return runShard({
    spec: { ...spec, load: { ...spec.load, durationMs } },
    shard: { index: 0, count: 1 },
    runId: 'sim-accuracy',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: () => undefined, window: () => undefined },
    signal: new AbortController().signal,
    ...(tap ? { tap } : {}),
  });
}
