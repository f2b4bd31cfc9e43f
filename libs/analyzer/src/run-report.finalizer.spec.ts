import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunLifecycle } from '@fathom/contracts';
import { createRepositories, openDatabase, type Database } from '@fathom/storage';
import { RunEventStore, STORED_PAGE_SIZE, foldStoredTokenStats, readStoredRun } from './run-event.store';
import { reportOfStoredRun, settlePauseMs } from './run-report.finalizer';
import { storedRunEvents } from './stored-run.test-util';

/**
 * The summary and report of `storedRunEvents('run-paged')` as the analyzer built them before it
 * read runs back in pages: the whole run listed at once, every token-stats batch expanded into
 * one signal per record (main at 40e0b11). A change of the report's content changes this file
 * on purpose, and says so in its commit.
 */
const GOLDEN = join(__dirname, '__fixtures__', 'paged-report.golden.json');

describe(reportOfStoredRun.name, () => {
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

  async function reportInPagesOf(pageSize: number) {
    const lifecycle = (await store.list(runId, { kind: 'lifecycle' })).map(
      (e) => e.payload as unknown as RunLifecycle,
    );
    const stored = await readStoredRun(store, runId, pageSize);
    const tokenStats = await foldStoredTokenStats(store, runId, stored.timeline, pageSize);
    const { summary, document } = reportOfStoredRun({
      runId,
      lifecycle,
      missing: [],
      stored,
      tokenStats,
      liveCauses: null,
      aborted: false,
      stallMs: 2000,
    });
    // As stored and published: JSON.
    return JSON.parse(JSON.stringify({ summary, document })) as unknown;
  }

  it.each([1, 7, STORED_PAGE_SIZE])(
    'builds, reading %p rows a page, the summary and report the whole-run read built',
    async (pageSize) => {
      const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as unknown;

      const sut = await reportInPagesOf(pageSize);

      expect(sut).toStrictEqual(golden);
    },
  );

  it('covers what the fold must get right: steps, buckets without a digest, samples, pre-batch signals', async () => {
    const { summary, document } = (await reportInPagesOf(7)) as {
      summary: {
        semantic: { responses: number; gapMeanMs: number };
        sweep: { steps: { goodput: unknown }[] };
      };
      document: { series: { windows: { judged: number }[]; tokenSamples: { spans: unknown[] }[] } };
    };

    expect(summary.semantic.responses).toBe(144);
    expect(summary.sweep.steps.every((s) => s.goodput !== null)).toBe(true);
    // Second 3's records lost one digest per shard: judged by the summary, in no bucket.
    expect(document.series.windows[3].judged).toBe(6);
    expect(document.series.windows.reduce((n, w) => n + w.judged, 0)).toBe(142);
    expect(document.series.tokenSamples.map((s) => s.spans.length)).toEqual([1, 1, 1, 1, 0, 0]);
  });
});

describe(settlePauseMs.name, () => {
  it('pauses 200 ms after a quick check, and twice a slow one so checks hold the store a third of the time', () => {
    expect(settlePauseMs(3)).toBe(200);
    expect(settlePauseMs(100)).toBe(200);
    expect(settlePauseMs(900)).toBe(1800);
  });
});
