/**
 * V8 heap of a run's token stats when its report is built: the whole run's stored batches read at
 * once and expanded into one signal per record (how the report read them before issue 14's
 * paging), against `TokenStatsAccumulator` fed one page of batches at a time. Synthetic batches
 * shaped as the semantic-monitor sends them; no database (PGlite's own copy of a whole-run result
 * set comes on top of the first figure and is not measured here).
 * Run: node --expose-gc -r ./bench/ts-register.js bench/report-fold.bench.ts [records=163445]
 *        [recordsPerBatch=50] [pageSize=200]
 * Heap after a full GC, so the figures do not depend on the host's load. Never fails.
 */
import { expandTokenStats, type TokenStatsBatchSignal, type TokenStatsSignal } from '@fathom/contracts';
import { TokenStatsAccumulator } from '@fathom/analysis';

const records = Number(process.argv[2] ?? 163_445);
const perBatch = Number(process.argv[3] ?? 50);
const pageSize = Number(process.argv[4] ?? 200);
const T0 = 1_700_000_000_000;

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Batch `b` as stored: parsed from its JSON, as a page's rows are. */
function storedBatch(b: number): TokenStatsBatchSignal {
  const count = Math.min(perBatch, records - b * perBatch);
  const batch: TokenStatsBatchSignal = {
    id: `batch-${b}`,
    schemaVersion: 1,
    campaignId: 'campaign-0001',
    runId: 'run-0001',
    emittedAt: T0 + b * 300,
    kind: 'token-stats-batch',
    stats: Array.from({ length: count }, (_, k) => ({
      requestId: `5b0e7f3c-${b}-${k}-4d1a-9c2e-7a1f0c3b8e21`,
      phase: { index: 0, segment: 'measured' as const },
      outputTokens: 32,
      chunks: 32,
      gapCount: 31,
      gapMeanMs: 12.5 + (k % 7),
      gapMaxMs: 40 + k,
      tokenCountMismatch: 0,
      assessment: 'no-logprobs' as const,
      meanEntropyBits: null,
      maxWindowMeanBits: null,
      riskSegments: 0,
      latencySloMet: k % 9 !== 0,
      checks: { 'hallucination-risk': true, 'semantic-drift': k % 5 !== 0 },
    })),
  };
  return JSON.parse(JSON.stringify(batch)) as TokenStatsBatchSignal;
}

function main(): void {
  if (!(globalThis as { gc?: () => void }).gc)
    console.warn('run with --expose-gc for readings after a full GC');
  const batches = Math.ceil(records / perBatch);
  console.log(`${records} records in ${batches} batches of ${perBatch}; pages of ${pageSize} rows`);

  const before = heapMb();
  const whole = Array.from({ length: batches }, (_, b) => storedBatch(b));
  const expanded: TokenStatsSignal[] = whole.flatMap(expandTokenStats);
  const wholeMb = heapMb() - before;
  console.log(
    `whole run read, expanded per record: ${wholeMb.toFixed(1)} MB heap (${expanded.length} signals held)`,
  );
  whole.length = 0;
  expanded.length = 0;

  const start = heapMb();
  const accumulator = new TokenStatsAccumulator({ windows: [], digests: [] });
  let peakMb = 0;
  for (let first = 0; first < batches; first += pageSize) {
    const page = Array.from({ length: Math.min(pageSize, batches - first) }, (_, i) =>
      storedBatch(first + i),
    );
    peakMb = Math.max(peakMb, heapMb() - start);
    for (const batch of page) accumulator.add(batch);
  }
  const figures = accumulator.figures();
  console.log(
    `paged fold: peak ${peakMb.toFixed(1)} MB heap (one page held), figures of ${figures.responses} responses after: ${(heapMb() - start).toFixed(2)} MB`,
  );
}

main();
