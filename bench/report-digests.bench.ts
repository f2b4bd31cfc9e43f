/**
 * V8 heap of a run's record digests when its report is built: every stored digest batch held in
 * a `RunTimeline` (how the report read them before), against `ReportDigestsAccumulator` fed one
 * page of batches at a time, holding at most `MAX_REPORT_DIGESTS` (or `cap`). The fold's own
 * request-end index (`requestEnds`, where token stats stored without their end are placed; at
 * most `MAX_REPORT_DIGESTS` ids) is measured apart. Synthetic
 * digests shaped as `digestRecord` makes them of a chat run; no database.
 * Run: node --expose-gc -r ./bench/ts-register.js bench/report-digests.bench.ts [records=163445]
 *        [recordsPerBatch=50] [pageSize=200] [cap=MAX_REPORT_DIGESTS]
 * Heap after a full GC, so the figures do not depend on the host's load. Never fails.
 */
import {
  MAX_REPORT_DIGESTS,
  ReportDigestsAccumulator,
  RunTimeline,
  tierPolicyFor,
  type RecordDigest,
} from '@fathom/analysis';

const records = Number(process.argv[2] ?? 163_445);
const perBatch = Number(process.argv[3] ?? 50);
const pageSize = Number(process.argv[4] ?? 200);
const cap = Number(process.argv[5] ?? MAX_REPORT_DIGESTS);
const T0 = 1_700_000_000_000;

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** Batch `b`'s digests as stored: parsed from their JSON, as a page's rows are. */
function storedBatch(b: number): RecordDigest[] {
  const count = Math.min(perBatch, records - b * perBatch);
  const digests: RecordDigest[] = Array.from({ length: count }, (_, k) => {
    const startedAt = T0 + b * 300 + k * 6;
    const e2eMs = 200 + ((b * 31 + k * 17) % 900);
    return {
      requestId: `5b0e7f3c-${b}-${k}-4d1a-9c2e-7a1f0c3b8e21`,
      serverRequestId: `req-${b}-${k}`,
      status: 200,
      correctedE2eMs: e2eMs + (k % 5),
      inputTokens: 120 + (k % 40),
      at: startedAt + e2eMs,
      startedAt,
      lateMs: k % 3,
      ok: k % 50 !== 0,
      errorClass: k % 50 === 0 ? 'http-5xx' : null,
      e2eMs,
      ttftMs: 40 + (k % 60),
      gapMaxMs: 30 + (k % 90),
      gapMedianMs: 12 + (k % 7),
      tokenMismatch: 0,
      outputTokens: 32 + (k % 200),
      riskSegments: k % 11 === 0 ? 1 : 0,
      maxWindowEntropyBits: 1.5 + (k % 10) / 10,
      calls: [{ layer: 'llm', path: '/v1/chat/completions', ok: k % 50 !== 0, status: 200 }],
    };
  });
  return JSON.parse(JSON.stringify(digests)) as RecordDigest[];
}

function main(): void {
  if (!(globalThis as { gc?: () => void }).gc)
    console.warn('run with --expose-gc for readings after a full GC');
  const batches = Math.ceil(records / perBatch);
  console.log(
    `${records} digests in ${batches} batches of ${perBatch}; pages of ${pageSize} rows; cap ${cap}`,
  );

  const before = heapMb();
  const timeline = new RunTimeline();
  for (let b = 0; b < batches; b++) timeline.addDigests(storedBatch(b));
  const wholeMb = heapMb() - before;
  console.log(
    `whole run held in a timeline: ${wholeMb.toFixed(1)} MB heap (${timeline.digests.length} digests)`,
  );

  const start = heapMb();
  const accumulator = new ReportDigestsAccumulator({
    objectives: tierPolicyFor(undefined).tiers.flatMap((t) => t.objectives),
    stallMs: 500,
    spanFromMs: T0 - 1,
    maxDigests: cap,
  });
  let peakMb = 0;
  let peakHeld = 0;
  for (let first = 0; first < batches; first += pageSize) {
    const page = Array.from({ length: Math.min(pageSize, batches - first) }, (_, i) =>
      storedBatch(first + i),
    );
    peakMb = Math.max(peakMb, heapMb() - start);
    for (const digests of page) accumulator.addDigests(digests);
    peakHeld = Math.max(peakHeld, accumulator.heldCount);
  }
  const figures = accumulator.figures();
  const foldMb = heapMb() - start;
  const ids = figures.requestEnds.ends.size;
  // The fold and its figures share the index: cleared, what it held is freed.
  (figures.requestEnds.ends as Map<string, number>).clear();
  const endsMb = foldMb - (heapMb() - start);
  console.log(
    `paged fold: peak ${peakMb.toFixed(1)} MB heap (one page held), ${peakHeld} digests held at most; after: ${foldMb.toFixed(1)} MB, of which the request-end index ~${endsMb.toFixed(1)} MB (${ids} ids${figures.requestEnds.complete ? '' : ', capped'})${figures.sample ? `; records table from a sample of ${figures.sample.kept} of ${figures.sample.of}` : ''}`,
  );
}

main();
