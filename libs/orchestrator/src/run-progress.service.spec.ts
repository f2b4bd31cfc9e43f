import { Topics, type CampaignSpec, type TelemetryWindow } from '@fathom/contracts';
import { ProgressLatency, buildRunProgress } from '@fathom/analysis';
import { encodeHistogram, newLatencyHistogram, recordMs } from '@fathom/load';
import {
  createRepositories,
  openDatabase,
  type Database,
  type RunEventRecord,
  type StorageRepositories,
} from '@fathom/storage';
import { PROGRESS_REREAD_MS, RunProgressService } from './run-progress.service';

const T0 = 1_700_000_000_000;

function histogram(valuesMs: number[]): string {
  const h = newLatencyHistogram();
  for (const v of valuesMs) recordMs(h, v);
  return encodeHistogram(h);
}

/** Shard `shard`'s window of second `second`, emitted at its end, with latencies of its own. */
function window(runId: string, shard: number, second: number): TelemetryWindow {
  const e2eMs = [100 + second * 3 + shard, 200 + shard * 7, 50 + (second % 5) * 11];
  return {
    id: `${runId}-w${shard}-${second}`,
    schemaVersion: 1,
    campaignId: 'c',
    runId,
    emittedAt: T0 + (second + 1) * 1000,
    generatorId: `g${shard}`,
    shard,
    windowStart: T0 + second * 1000,
    windowMs: 1000,
    seq: second,
    requests: e2eMs.length,
    errors: second % 7 === 0 ? 1 : 0,
    errorClasses: second % 7 === 0 ? { http_5xx: 1 } : {},
    dropped: 0,
    late: second % 3,
    inputTokens: 0,
    outputTokens: 0,
    histogramsUs: {
      e2e: histogram(e2eMs),
      correctedE2e: histogram(e2eMs),
      ttft: histogram(e2eMs.map((v) => v / 10)),
      itl: histogram([]),
    },
  };
}

describe(RunProgressService.name, () => {
  let db: Database;
  let repositories: StorageRepositories;
  let sut: RunProgressService;

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: null });
    repositories = createRepositories(db);
  });

  afterAll(async () => {
    await db?.close();
  });

  beforeEach(() => {
    sut = new RunProgressService(repositories.runs, repositories.campaigns, repositories.runEvents);
  });

  async function startRun(): Promise<string> {
    const campaign = await repositories.campaigns.create({
      spec: {
        name: 'progress',
        target: { baseUrl: 'http://127.0.0.1:8000/v1' },
        scenario: { type: 'chat', prompts: ['hi'] },
        load: { concurrency: 1, durationMs: 600_000 },
      } as unknown as CampaignSpec,
    });
    const run = await repositories.runs.create({ campaignId: campaign.id, trigger: 'api' });
    await repositories.runs.transition(run.id, 'running', { at: T0 });
    return run.id;
  }

  const store = (windows: TelemetryWindow[]) =>
    repositories.runEvents.appendMany(
      windows.map((w) => ({
        eventId: w.id,
        runId: w.runId,
        topic: Topics.telemetryWindow.name,
        kind: 'window',
        occurredAt: w.emittedAt,
        payload: w as never,
      })),
    );

  /** The progress of `windows` computed in one go, as the service did before it kept windows. */
  const inOneGo = (runId: string, windows: TelemetryWindow[], nowMs: number) =>
    buildRunProgress(
      {
        runId,
        status: 'running',
        startedAt: T0,
        endedAt: null,
        plannedDurationMs: 600_000,
        windows,
        tierChanges: [],
        breakerChanges: [],
        nowMs,
      },
      new ProgressLatency(),
    );

  it('answers as a read of the whole run would, while each call reads only what is new', async () => {
    const runId = await startRun();
    const stored: TelemetryWindow[] = [];
    // Windows read back, by either way the repository reads a run's events.
    const reads = [
      jest.spyOn(repositories.runEvents, 'pageByRun'),
      jest.spyOn(repositories.runEvents, 'listByRun'),
    ];
    const rowsRead = async () => {
      const results = reads.flatMap((spy) =>
        spy.mock.results.map((r) => r.value as Promise<RunEventRecord[]>),
      );
      return (await Promise.all(results)).flat().filter((e) => e.kind === 'window').length;
    };
    let rowsBefore = 0;
    // Two shards for 300 s, asked every 10 s; shard 1 lags: each of its windows is stored 20 s
    // after shard 0's of the same second, so after newer ones.
    for (let second = 0; second < 300; second += 10) {
      const batch = [];
      for (let s = second; s < second + 10; s++) batch.push(window(runId, 0, s));
      for (let s = second - 20; s < second - 10; s++) if (s >= 0) batch.push(window(runId, 1, s));
      await store(batch);
      stored.push(...batch);
      const nowMs = T0 + (second + 10) * 1000;

      const progress = await sut.get(runId, nowMs);

      expect(progress).toEqual(inOneGo(runId, stored, nowMs));
      const rows = (await rowsRead()) - rowsBefore;
      rowsBefore += rows;
      // The new windows and the re-read span (2 shards x 60 s), never the whole run.
      expect(rows).toBeLessThanOrEqual(batch.length + (2 * PROGRESS_REREAD_MS) / 1000 + 2);
    }
    expect(stored).toHaveLength(300 + 280);
    for (const spy of reads) spy.mockRestore();
  });

  it('leaves out of live progress a window stored later than the re-read span', async () => {
    const runId = await startRun();
    const early = Array.from({ length: 100 }, (_, s) => window(runId, 0, s));
    await store(early);
    await sut.get(runId, T0 + 100_000);
    const tooLate = window(runId, 1, 100 - PROGRESS_REREAD_MS / 1000 - 5);
    const inTime = window(runId, 1, 100 - PROGRESS_REREAD_MS / 1000 + 5);
    await store([tooLate, inTime]);

    const progress = await sut.get(runId, T0 + 101_000);

    expect(progress?.requests).toBe((early.length + 1) * 3);
    expect(progress).toEqual(inOneGo(runId, [...early, inTime], T0 + 101_000));
  });

  it('is null for a run that does not exist', async () => {
    expect(await sut.get('no-such-run')).toBeNull();
  });
});
