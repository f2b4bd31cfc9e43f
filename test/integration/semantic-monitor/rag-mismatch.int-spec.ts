import { Detectors } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { Topics, type DetectorSignal, type SemanticSignal } from '@fathom/contracts';
import type { RunReportDocument } from '@fathom/analysis';
import { RunReportRepository } from '@fathom/storage';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * Customer-support queries; each has three answers in the support index. Five, not four: the
 * sample (every 4th record at rate 1, a query and 3 documents each) would otherwise see one
 * query of the cycle only.
 */
const queries = [
  'How do I get a refund for a damaged order?',
  'How long does shipping to Norway take?',
  'How do I reset my account password?',
  'How do I cancel my subscription?',
  'Which payment methods do you accept?',
];
/** An FAQ index: each entry restates its question, three answers per query. */
const answers = [
  [
    'Send a photo of the damage and the refund reaches your card within 5 days.',
    'Return the damaged order with our prepaid label for a full refund.',
    'Reply to your order email with a photo of the damaged item.',
  ],
  [
    'It takes 3 to 5 business days, and the parcel is tracked.',
    'Orders leave within a day and arrive in about 4 days.',
    'Standard shipping takes 5 days, express shipping takes 2.',
  ],
  [
    'Choose forgot password on the sign-in page.',
    'We email a link that lets you set a new password.',
    'If the link does not arrive, contact support to unlock your account.',
  ],
  [
    'Open Account, then Plan, and cancel; it runs to the end of the period.',
    'You can cancel at any time, without a fee.',
    'After you cancel, no further payment is taken.',
  ],
  [
    'Visa, Mastercard, PayPal and bank transfer.',
    'Cards and PayPal at checkout, invoices for companies.',
    'Card or PayPal; the payment is taken when the order ships.',
  ],
];
const supportIndex = queries.flatMap((q, i) => answers[i].map((a) => `Q: ${q} A: ${a}`));
/** The planted mismatch: the same queries against an index of another topic entirely. */
const natureIndex = [
  'Jupiter has ninety-five known moons; Ganymede, the largest, is bigger than Mercury.',
  'The Nile flows north for about 6,650 kilometres to the Mediterranean Sea.',
  'Photosynthesis turns carbon dioxide and water into glucose and oxygen.',
  'The violin has four strings tuned in fifths: G, D, A and E.',
  'Mount Everest rises 8,849 metres above sea level.',
  'Honeybees tell their hive mates where flowers are with a waggle dance.',
  "Saturn's rings are made mostly of ice with some rock.",
  'Octopuses have three hearts and blue blood.',
  'Volcanoes form where tectonic plates pull apart or collide.',
  'A cello is tuned an octave below the viola.',
  'The speed of light in vacuum is about 300,000 kilometres per second.',
  'Coral reefs are built by colonies of tiny animals called polyps.',
  'Penguins live almost only in the southern hemisphere.',
  'The Pacific is the largest and deepest of the oceans.',
  'Lightning heats the air around it to about 30,000 degrees.',
];

/**
 * RAG query/document mismatch end to end: the embedded runtime runs the retrieve layer against
 * the simulated target, whose index holds only the texts upserted here (no synthetic vectors).
 * The retrieve driver carries the top 3 documents on each record; the semantic-monitor embeds
 * queries and documents (USE lite, in its worker) and publishes `rag-mismatch`. Support queries
 * against the support answers stay under the KL threshold (info); the same queries against an
 * index about nature and space go over it (warning).
 */
describe('semantic-monitor: RAG query/document mismatch', () => {
  jest.setTimeout(90_000);
  let sut: EmbeddedFathom;
  const sims: SimTarget[] = [];
  const signals: SemanticSignal[] = [];

  async function simWithIndex(texts: string[]): Promise<SimTarget> {
    const sim = await startSimTarget({ port: 0, config: { timeScale: 0.05, rag: { initialIndexSize: 0 } } });
    sims.push(sim);
    const response = await fetch(`${sim.url}/rag/index/upsert`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vectors: texts.map((text, i) => ({ id: `doc-${i}`, text })) }),
    });
    expect(response.status).toBe(200);
    return sim;
  }

  beforeAll(async () => {
    delete process.env.FATHOM_SEMANTIC_EMBEDDER; // the default: USE lite, offline
    // Every record offered to the sample: the RAG budget still embeds only every 4th (a query
    // and 3 documents each), and the LRU cache makes repeats free (20 distinct texts per run).
    process.env.FATHOM_SEMANTIC_MIN_SAMPLE_RATE = '1';
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    await sut.bus.subscribe(
      Topics.semanticSignal,
      { group: 'test-rag-mismatch' },
      (s) => void signals.push(s),
    );
  });

  afterAll(async () => {
    await sut?.close();
    await Promise.all(sims.map((s) => s.close()));
    delete process.env.FATHOM_SEMANTIC_MIN_SAMPLE_RATE;
  });

  async function finalSignal(
    sim: SimTarget,
    durationMs = 2000,
  ): Promise<{ runId: string; final: DetectorSignal | undefined }> {
    const { runId } = await sut.campaigns.submit(
      {
        name: 'rag mismatch',
        target: { baseUrl: `${sim.url}/v1` },
        scenario: { type: 'rag', layer: 'retrieve', dataset: { type: 'inline', prompts: queries }, k: 3 },
        load: { concurrency: 4, durationMs, profile: { type: 'constant-rate', ratePerSec: 40 } },
        slo: { p99Ms: 60_000 },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      },
      'api',
    );
    await waitForRun(sut.runs, runId, { timeoutMs: 60_000 });
    const id = `${runId}/${Detectors.ragMismatch}/final`;
    const deadline = Date.now() + 20_000;
    while (!signals.some((s) => s.id === id) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    return { runId, final: signals.find((s): s is DetectorSignal => s.kind === 'detector' && s.id === id) };
  }

  const ragSignals = (runId: string) =>
    signals.filter(
      (s): s is DetectorSignal =>
        s.kind === 'detector' && s.runId === runId && s.detector === Detectors.ragMismatch,
    );

  it('finds no mismatch when the index answers the queries, and raises it when the index is off topic', async () => {
    const matched = await finalSignal(await simWithIndex(supportIndex));
    expect(matched.final).toBeDefined();
    const m = matched.final!.figures;
    expect(m.pairs).toBeGreaterThanOrEqual(12);
    expect(m.meanKl).toBeLessThan(m.thresholdKl);
    expect(m.overThresholdShare).toBeLessThan(0.5);
    expect(m.mismatched).toBe(0);
    // No alarm at any point of the run.
    expect(ragSignals(matched.runId).every((s) => s.severity === 'info')).toBe(true);

    // Long enough for the monitor's first verdict (sent at once) and the analyzer's live
    // evaluations after it: the run's final signal may come after its report.
    const planted = await finalSignal(await simWithIndex(natureIndex), 5000);
    expect(planted.final).toBeDefined();
    const p = planted.final!.figures;
    expect(p.pairs).toBeGreaterThanOrEqual(12);
    expect(planted.final!.severity).toBe('warning');
    expect(p.mismatched).toBe(1);
    expect(p.meanKl).toBeGreaterThan(p.thresholdKl);
    expect(p.overThresholdShare).toBeGreaterThan(0.9);
    expect(p.meanKl).toBeGreaterThan(1.5 * m.meanKl);
    expect(p.p95Kl).toBeGreaterThanOrEqual(p.meanKl);

    // The analyzer names the RAG recall avalanche in the planted run's report, not in the other.
    const causes = async (runId: string) => {
      const stored = await sut.fathom.app.get(RunReportRepository).latest(runId);
      return (stored?.document as unknown as RunReportDocument | undefined)?.rootCauses ?? [];
    };
    const named = (await causes(planted.runId)).find((c) => c.kind === 'retrieval-mismatch');
    expect(named?.figures.overThresholdShare).toBeGreaterThan(0.9);
    expect((await causes(matched.runId)).map((c) => c.kind)).not.toContain('retrieval-mismatch');
  });
});
