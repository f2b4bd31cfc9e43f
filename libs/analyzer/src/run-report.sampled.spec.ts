import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunLifecycle } from '@fathom/contracts';
import { REPORT_DIGEST_SAMPLE_SEED } from '@fathom/analysis';
import { createRepositories, openDatabase, type Database } from '@fathom/storage';
import { RunEventStore, foldStoredTokenStats, readStoredRun } from './run-event.store';
import { reportOfStoredRun } from './run-report.finalizer';
import { storedRunEvents } from './stored-run.test-util';

const GOLDEN = join(__dirname, '__fixtures__', 'paged-report.golden.json');
/** The golden report's stall bound (`run-report.finalizer.spec.ts`). */
const STALL_MS = 2000;

type Report = {
  summary: unknown;
  document: {
    series: {
      windows: Record<string, unknown>[];
      tokenSamples: { requestId: string }[];
      records: unknown[];
      recordsTotal: number;
      recordsSample?: unknown;
      tokenStatsPlacedByEmission?: number;
    };
  };
};

describe('a report over the digest cap', () => {
  const runId = 'run-paged';
  let db: Database;
  let store: RunEventStore;

  beforeAll(async () => {
    db = await openDatabase({ kind: 'pglite', dataDir: null });
    const repositories = createRepositories(db);
    await repositories.runEvents.appendMany(storedRunEvents(runId));
    store = new RunEventStore(repositories.runEvents);
  });

  afterAll(async () => {
    await db?.close();
  });

  /** As the finalizer reads and reports a run, holding at most `maxDigests` digests. */
  async function reportHolding(maxDigests?: number, maxRequestEnds?: number) {
    const lifecycle = (await store.list(runId, { kind: 'lifecycle' })).map(
      (e) => e.payload as unknown as RunLifecycle,
    );
    const stored = await readStoredRun(store, runId, 7, { stallMs: STALL_MS, maxDigests, maxRequestEnds });
    const tokenStats = await foldStoredTokenStats(store, runId, stored.tokenPlacement, 7);
    const { summary, document } = reportOfStoredRun({
      runId,
      lifecycle,
      missing: [],
      stored,
      tokenStats,
      liveCauses: null,
      aborted: false,
      stallMs: STALL_MS,
    });
    return {
      held: stored.timeline.digests.length,
      report: JSON.parse(JSON.stringify({ summary, document })) as Report,
    };
  }

  it('under the cap is the golden report, the sample label absent', async () => {
    const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Report;

    const sut = await reportHolding();

    expect(sut.report).toStrictEqual(golden);
    expect(sut.held).toBe(golden.document.series.recordsTotal);
  });

  it('over a lowered cap holds no more, keeps every exact figure, and labels the sampled records', async () => {
    const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Report;
    const total = golden.document.series.recordsTotal;

    const sut = await reportHolding(20);

    expect(total).toBeGreaterThan(20);
    expect(sut.held).toBe(20);
    const { records, recordsSample, ...series } = sut.report.document.series;
    const { records: _all, ...goldenSeries } = golden.document.series;
    expect(records).toHaveLength(20);
    expect(recordsSample).toEqual({ kept: 20, of: total, seed: REPORT_DIGEST_SAMPLE_SEED });
    // Everything but the records table: summary, objectives, validity, slowest requests, counts.
    expect(series).toStrictEqual(goldenSeries);
    expect({ ...sut.report.document, series: null }).toStrictEqual({ ...golden.document, series: null });
    expect(sut.report.summary).toStrictEqual(golden.summary);
    // The sampled rows are rows of the run, in end order.
    const goldenRows = new Set(golden.document.series.records.map((r) => JSON.stringify(r)));
    expect(records.every((r) => goldenRows.has(JSON.stringify(r)))).toBe(true);
  });

  it('past a lowered request-end index, labels the responses placed by their batch, every count whole', async () => {
    const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Report;

    const sut = await reportHolding(undefined, 10);

    const { windows, tokenSamples, tokenStatsPlacedByEmission, ...series } = sut.report.document.series;
    const { windows: goldenWindows, tokenSamples: goldenSamples, ...goldenSeries } = golden.document.series;
    // The fixture's stats are stored without their end (as before `endedAt`): past the first 10
    // requests' digests, each with a digest is placed (and its token sample timed) by its batch.
    expect(tokenStatsPlacedByEmission).toBeGreaterThan(0);
    expect(series).toStrictEqual(goldenSeries);
    const ids = (samples: { requestId: string }[]) => samples.map((t) => t.requestId).sort();
    expect(ids(tokenSamples)).toEqual(ids(goldenSamples));
    // Only the buckets' goodput moved: the windows' own figures are the golden's.
    const ownFigures = (ws: Record<string, unknown>[]) =>
      ws.map(
        ({
          judged: _j,
          good: _g,
          semanticallyGood: _s,
          goodputPerSec: _gp,
          semanticGoodputPerSec: _sp,
          ...w
        }) => w,
      );
    expect(ownFigures(windows)).toStrictEqual(ownFigures(goldenWindows));
    expect({ ...sut.report.document, series: null }).toStrictEqual({ ...golden.document, series: null });
    expect(sut.report.summary).toStrictEqual(golden.summary);
  });

  it('refuses to recount stalls of a sampled run with another bound', async () => {
    const lifecycle = (await store.list(runId, { kind: 'lifecycle' })).map(
      (e) => e.payload as unknown as RunLifecycle,
    );
    const stored = await readStoredRun(store, runId, 7, { stallMs: 500, maxDigests: 20 });
    const tokenStats = await foldStoredTokenStats(store, runId, stored.tokenPlacement, 7);

    expect(() =>
      reportOfStoredRun({
        runId,
        lifecycle,
        missing: [],
        stored,
        tokenStats,
        liveCauses: null,
        aborted: false,
        stallMs: STALL_MS,
      }),
    ).toThrow(/read it back with stallMs 2000/);
  });
});
