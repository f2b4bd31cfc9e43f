import { startSimTarget, type FaultSpecInput, type SimTarget } from '@fathom/sim';
import {
  Topics,
  type BreakerChange,
  type CampaignSpecInput,
  type RootCauseChange,
  type SloTierChange,
} from '@fathom/contracts';
import type { RunReportDocument } from '@fathom/analysis';
import { RunReportRepository } from '@fathom/storage';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { waitForRun } from '@fathom/runtime';

/**
 * Every fault the simulated target can plant, each planted 4 s into its own short run (so the
 * analyzer has a clean baseline), all runs at once on one embedded stack: the live top root
 * cause must be the planted one, named within 10 s of the onset; a clean run names nothing.
 */
const RUN_MS = 10_000;
const ONSET_AFTER_MS = 4_000;

interface Case {
  readonly name: string;
  readonly expected: string | null;
  readonly fault: FaultSpecInput | null;
  readonly scenario: CampaignSpecInput['scenario'];
  readonly concurrency: number;
  /** Where the scenario's paths hang off the sim: `/v1` for the OpenAI API, '' for RAG/tools. */
  readonly base: string;
  /**
   * Runs of one batch share the machine's two cores; batches run one after the other. The clean
   * run has a batch to itself: beside other runs this in-process stack's own CPU contention puts
   * its corrected P99 above 800 ms, which is the generator's figure, not the target's.
   */
  readonly batch: 1 | 2 | 3;
}

const chat = (extra: Record<string, unknown> = {}): CampaignSpecInput['scenario'] => ({
  type: 'chat',
  model: 'fathom-sim-8b',
  prompts: ['Explain KV caching.', 'Name three rivers.', 'Summarise the plot of Hamlet.'],
  maxTokens: 32,
  ...extra,
});

const CASES: Case[] = [
  {
    name: 'clean',
    batch: 1,
    expected: null,
    fault: null,
    scenario: chat(),
    concurrency: 2,
    base: '/v1',
  },
  {
    name: 'latency spike',
    batch: 2,
    expected: 'engine-step-slowdown',
    fault: { kind: 'latency_spike', addMs: 100 },
    scenario: chat(),
    concurrency: 2,
    base: '/v1',
  },
  {
    name: 'KV-cache shrink',
    batch: 3,
    expected: 'kv-cache-pressure',
    fault: { kind: 'kv_shrink', fraction: 0.005 },
    scenario: chat({ maxTokens: 64 }),
    concurrency: 8,
    base: '/v1',
  },
  {
    name: 'stream stall',
    batch: 2,
    expected: 'stream-stall',
    fault: { kind: 'stream_stall', afterTokens: 8, stallMs: 1500 },
    scenario: chat(),
    concurrency: 4,
    base: '/v1',
  },
  {
    name: 'raised hallucination rate',
    batch: 3,
    expected: 'hallucination-rise',
    fault: { kind: 'hallucination_rate', rate: 1 },
    scenario: chat({ logprobs: true, topLogprobs: 5 }),
    concurrency: 2,
    base: '/v1',
  },
  {
    name: 'schema drift',
    batch: 3,
    expected: 'tool-schema-drift',
    fault: { kind: 'schema_drift', mode: 'required_dropped', tool: 'weather' },
    scenario: {
      type: 'http',
      steps: [
        {
          name: 'weather',
          method: 'POST',
          path: '/tools/weather/invoke',
          body: { city: 'Paris' },
          assertions: [{ kind: 'jsonpath', name: 'has-conditions', path: '$.conditions', exists: true }],
        },
      ],
    },
    concurrency: 4,
    base: '',
  },
  {
    name: 'reranker saturation',
    batch: 3,
    expected: 'reranker-saturation',
    fault: { kind: 'reranker_saturation', inUse: 32 },
    scenario: {
      type: 'http',
      steps: [
        {
          name: 'rerank',
          method: 'POST',
          path: '/rag/rerank',
          body: {
            query: 'kv cache',
            documents: ['paged attention', 'prefix caching', 'rivers of europe'],
            top_n: 2,
          },
        },
      ],
    },
    concurrency: 4,
    base: '',
  },
  {
    name: 'agent oscillation',
    batch: 3,
    expected: 'agent-oscillation',
    fault: { kind: 'agent_oscillation' },
    scenario: { type: 'agents', agents: 3, steps: 12 },
    concurrency: 2,
    base: '',
  },
  {
    name: 'agent deadlock',
    batch: 3,
    expected: 'agent-deadlock',
    fault: { kind: 'agent_deadlock' },
    scenario: { type: 'agents', agents: 3, steps: 12 },
    concurrency: 2,
    base: '',
  },
];

interface Outcome {
  readonly runId: string;
  readonly onsetAt: number | null;
  readonly document: RunReportDocument;
}

describe('analyzer root cause against the simulated target', () => {
  jest.setTimeout(90_000);
  let sut: EmbeddedFathom;
  const sims: SimTarget[] = [];
  const causeEvents: RootCauseChange[] = [];
  const breakerEvents: BreakerChange[] = [];
  const tierEvents: SloTierChange[] = [];
  const outcomes = new Map<string, Promise<Outcome>>();

  beforeAll(async () => {
    process.env.FATHOM_ANALYZER_SETTLE_MS = '3000';
    process.env.FATHOM_GPU_SCRAPE_MS = '500';
    sut = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    await sut.bus.subscribe(
      Topics.rootCause,
      { group: 'test-causes' },
      async (e) => void causeEvents.push(e),
    );
    await sut.bus.subscribe(
      Topics.breaker,
      { group: 'test-breakers' },
      async (e) => void breakerEvents.push(e),
    );
    await sut.bus.subscribe(Topics.sloTier, { group: 'test-tiers' }, async (e) => void tierEvents.push(e));
    const reports = sut.fathom.app.get(RunReportRepository);
    // The first run in a fresh process measures the process's own warm-up (JIT, pools, PGlite):
    // a short unasserted run absorbs it so the clean run's baseline is the target's.
    const warmSim = await startSimTarget({ port: 0, config: { timeScale: 0.25 } });
    sims.push(warmSim);
    let previous: Promise<unknown> = runCase(
      {
        name: 'warm-up',
        batch: 1,
        expected: null,
        fault: null,
        scenario: chat({ logprobs: true, topLogprobs: 5 }),
        concurrency: 2,
        base: '/v1',
      },
      warmSim,
      reports,
      3_000,
    ).catch(() => undefined);
    for (const batch of [1, 2, 3] as const) {
      const after = previous;
      const started: Promise<Outcome>[] = [];
      for (const c of CASES.filter((x) => x.batch === batch)) {
        // A quarter of real time: a 32-token answer takes ~150 ms, so runs are short yet gaps of milliseconds stay measurable.
        const sim = await startSimTarget({ port: 0, config: { timeScale: 0.25 } });
        sims.push(sim);
        const outcome = after.then(() => runCase(c, sim, reports));
        outcomes.set(c.name, outcome);
        started.push(outcome);
      }
      previous = Promise.allSettled(started);
    }
    // Unhandled rejections would surface only in the test that awaits them.
    for (const p of outcomes.values()) p.catch(() => undefined);
  });

  afterAll(async () => {
    await sut?.close();
    await Promise.all(sims.map((s) => s.close()));
  });

  async function runCase(
    c: Case,
    sim: SimTarget,
    reports: RunReportRepository,
    durationMs = RUN_MS,
  ): Promise<Outcome> {
    const { runId } = await sut.campaigns.submit(
      {
        name: `root cause: ${c.name}`,
        target: {
          baseUrl: `${sim.url}${c.base}`,
          metricsUrls: [`${sim.url}/metrics`, `${sim.url}/dcgm/metrics`],
        },
        scenario: c.scenario,
        load: { concurrency: c.concurrency, durationMs },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      } as never,
      'api',
    );
    let onsetAt: number | null = null;
    for (;;) {
      const run = await sut.runs.get(runId);
      if (run && run.status !== 'pending') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (c.fault) {
      await new Promise((r) => setTimeout(r, ONSET_AFTER_MS));
      sim.faults.set(c.fault);
      onsetAt = Date.now();
    }
    await waitForRun(sut.runs, runId, { timeoutMs: 60_000 });
    const stored = await reports.latest(runId);
    if (!stored) throw new Error(`no report for ${c.name}`);
    return { runId, onsetAt, document: stored.document as unknown as RunReportDocument };
  }

  it('raises nothing on a clean run: no cause, no breaker, a valid measurement', async () => {
    const { runId, document } = await outcomes.get('clean')!;
    expect(document.schemaVersion).toBe(2);
    expect(document.rootCauses).toEqual([]);
    expect(causeEvents.filter((e) => e.runId === runId)).toEqual([]);
    expect(breakerEvents.filter((e) => e.runId === runId)).toEqual([]);
    // No tier assertion: on this in-process, two-core harness the clean run's corrected P99 at
    // times passes 800-1200 ms (event-loop pauses of ~1 s in the shared process), a true reading
    // of the harness that would make a tier assertion flaky. Every tier change still names its
    // objective and figure.
    for (const change of document.tiers.changes.filter((t) => t.from !== null)) {
      expect(change).toMatchObject({ objective: expect.any(String), figures: { value: expect.any(Number) } });
    }
    expect(document.validity).toMatchObject({ valid: true, reasons: [] });
    // What the generator cost itself is reported on a valid run too.
    expect(document.validity.generator?.windows).toBeGreaterThan(0);
    expect(document.summary.requests).toBeGreaterThan(50);
    expect(document.gpu.kvHitRateVariance).not.toBeNull();
    expect(document.gpu.smHeatMap.rows.length).toBeGreaterThan(0);
  });

  for (const c of CASES.filter((x) => x.expected !== null)) {
    it(`names ${c.expected} as the top cause within 10 s of a planted ${c.name}`, async () => {
      const { runId, onsetAt, document } = await outcomes.get(c.name)!;
      const events = causeEvents.filter((e) => e.runId === runId).sort((a, b) => a.emittedAt - b.emittedAt);
      const firstTop = events.find((e) => e.top === c.expected);
      const detail = JSON.stringify({
        events: events.map((e) => [
          e.emittedAt - onsetAt!,
          e.top,
          e.causes.map((x) => `${x.kind}:${x.confidence.toFixed(2)}`),
        ]),
        report: document.rootCauses.map((x) => x.kind),
      });
      expect({ firstTop: firstTop?.top ?? null, detail }).toEqual({ firstTop: c.expected, detail });
      // Nothing was named before the fault existed.
      expect(events[0].emittedAt).toBeGreaterThanOrEqual(onsetAt!);
      const latencyMs = firstTop!.emittedAt - onsetAt!;
      console.log(`${c.name}: ${c.expected} named ${latencyMs} ms after onset`);
      expect(latencyMs).toBeLessThanOrEqual(10_000);
      expect(document.rootCauses[0].kind).toBe(c.expected);
      expect(document.rootCauses[0].evidence.length).toBeGreaterThan(0);
      expect(document.rootCauses[0].advice.length).toBeGreaterThan(0);
    });
  }

  it('opens the rerank breaker and publishes the tier drop with its objective on reranker saturation', async () => {
    const { runId } = await outcomes.get('reranker saturation')!;
    const opened = breakerEvents.find((e) => e.runId === runId && e.to === 'open');
    if (!opened)
      console.log(
        JSON.stringify(breakerEvents.filter((e) => e.runId === runId)),
        JSON.stringify(tierEvents.filter((e) => e.runId === runId)),
      );
    expect(opened?.breaker.layer).toBe('rerank');
    expect(opened?.paths).toEqual(['/rag/rerank']);
    const tiers = tierEvents.filter((e) => e.runId === runId && e.from !== null);
    // 503s cost availability (SLO-1's 99.5 % too) and the trip counts: the run leaves SLO-0.
    expect(tiers[0]?.from).toBe('SLO-0');
    expect(['SLO-1', 'SLO-breach']).toContain(tiers[0]?.to);
    expect(tiers[0]?.objective).toEqual(expect.any(String));
    expect(tiers[0]?.figures.value).toEqual(expect.any(Number));
  });
});
