import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import {
  FAULT_CELLS,
  cleanCell,
  runCell,
  summarise,
  type Outcome,
} from '../../../bench/detection/detection-matrix';

/**
 * A quick slice of the detection benchmark (bench/detection, issue 15 §1): one seeded run of a
 * few cells on one embedded Fathom, each planted at its seeded random onset; each must be named
 * within 10 s of it. The cells are the ones the full matrix named 10 times in 10 even on a
 * starved 2-core machine (bench/RESULTS.md), and the rate limit, whose Retry-After must come from
 * the header. None of them is judged on the client's clock, so a busy test host changes none of
 * the verdicts. A clean run at 4 streams must name none of these classes either; the classes
 * timed by the client's clock (decode slowdown, stalls, queueing, timeouts) are left out of that
 * check: on a busy host the simulator, which shares it, really slows down (its own step-time
 * histogram says so), and only the full matrix on a quiet host measures their false alarms.
 */
const SLICE = [
  'reranker_saturation 32',
  'schema_drift required_dropped',
  'kv_shrink 0.005',
  'prompt explosion depth 12',
  'rate_limit 50 %',
];

describe('detection matrix, quick slice', () => {
  jest.setTimeout(180_000);
  let fathom: EmbeddedFathom;
  const outcomes: Outcome[] = [];
  const saved = { ...process.env };

  beforeAll(async () => {
    process.env.FATHOM_ANALYZER_SETTLE_MS = '3000';
    process.env.FATHOM_GPU_SCRAPE_MS = '500';
    process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
    fathom = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    const cells = [...FAULT_CELLS.filter((c) => SLICE.includes(c.name)), cleanCell(4)];
    expect(cells.map((c) => c.name).sort()).toEqual([...SLICE, 'clean c=4'].sort());
    // Two at a time: six 9 s runs in about 40 s.
    for (let i = 0; i < cells.length; i += 2)
      outcomes.push(
        ...(await Promise.all(
          cells
            .slice(i, i + 2)
            .map((c) => runCell(fathom, c, 7, { runMs: 9_000, onsetMs: [2_500, 5_500], timeScale: 0.25 })),
        )),
      );
  });

  afterAll(async () => {
    await fathom?.close();
    for (const k of ['FATHOM_ANALYZER_SETTLE_MS', 'FATHOM_GPU_SCRAPE_MS', 'FATHOM_SEMANTIC_EMBEDDER'])
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
  });

  /**
   * A run the generator limited (issue 13's verdict, over half its windows) names client-bound and
   * from then on no target cause (issue 15 §2): on a busy test host that is the right answer.
   */
  const clientBound = (o: Outcome) => o.named.some((c) => c.kind === 'client-bound');

  it.each(SLICE)('names the planted cause of %s within 10 s of its onset (or client-bound)', (name) => {
    const o = outcomes.find((x) => x.cell.name === name)!;
    if (clientBound(o)) {
      // Named before the run turned client-bound, the planted cause may stay; nothing else may.
      expect(o.named.map((c) => c.kind).filter((k) => k !== 'client-bound' && k !== o.cell.expected)).toEqual(
        [],
      );
      return;
    }
    const named = o.named.find((c) => c.kind === o.cell.expected);
    const detail = JSON.stringify(o.named);
    expect({ named: named?.kind ?? null, detail }).toEqual({ named: o.cell.expected, detail });
    expect(named!.afterOnsetMs).toBeLessThanOrEqual(10_000);
  });

  it('takes the rate limit’s Retry-After from the header of every 429', () => {
    const run = outcomes.find((o) => o.cell.name === 'rate_limit 50 %')!;
    if (clientBound(run)) return; // no target cause claimed: checked above
    const cause = run.named.find((c) => c.kind === 'rate-limited')!;
    expect(cause.figures).toMatchObject({ retryAfterMaxS: 2, retryAfterHeaderShare: 1 });
  });

  it('names no cause on the clean run but those timed by the client, which a busy host can slow', () => {
    const clientTimed = [
      'engine-step-slowdown',
      'stream-stall',
      'capacity-saturation',
      'request-timeouts',
      'client-bound',
    ];
    const named = outcomes.find((o) => o.cell.name === 'clean c=4')!.named.map((c) => c.kind);
    expect(named.filter((k) => !clientTimed.includes(k))).toEqual([]);
  });

  it('summarises the slice as the benchmark does', () => {
    const judged = outcomes.filter((o) => o.cell.expected !== null && !clientBound(o));
    const summary = summarise(judged);
    for (const c of summary.classes) expect(c).toMatchObject({ runs: 1, recall: 1, precision: 1 });
    expect(summary.perCell.map((c) => c.hits)).toEqual(judged.map(() => 1));
  });
});
