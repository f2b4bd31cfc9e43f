/**
 * The detection matrix (issue 15 §1): cells of planted simulator faults at several intensities,
 * each run as a real campaign on one embedded Fathom (load-generator -> sim -> gpu-collector,
 * semantic-monitor -> analyzer, the same code path as `fathom up`), the fault switched on at a
 * seeded random time; plus clean runs from light load to past the simulator's knee (32
 * sequences). What is measured is what a user reads: the causes the run's report names and when
 * the analyzer first named each.
 */
import { CauseThresholds, type RunReportDocument } from '@fathom/analysis';
import type { CampaignSpecInput } from '@fathom/contracts';
import type { FaultSpecInput } from '@fathom/sim';
import { startSimProcess, type SimProcess } from './sim-process';
import { RunEventRepository, RunReportRepository } from '@fathom/storage';
import type { TelemetryWindow } from '@fathom/contracts';
import { CLIENT_BOUND_THRESHOLDS, clientBoundReason } from '@fathom/load';
import { waitForRun, type EmbeddedFathom } from '@fathom/runtime';

export interface Cell {
  readonly name: string;
  /** The cause kind the fault should be named as; null for a clean run. */
  readonly expected: string | null;
  readonly fault: FaultSpecInput | null;
  readonly scenario:
    CampaignSpecInput['scenario'] | ((sim: SimProcess) => Promise<CampaignSpecInput['scenario']>);
  readonly concurrency: number;
  /** Where the scenario's paths hang off the sim: `/v1` for the OpenAI API, '' for RAG/tools/agents. */
  readonly base: '/v1' | '';
  /** `start`: the fault is in the input itself (prompt explosion), present from the first request. */
  readonly onset: 'random' | 'start';
  /**
   * A clean run past the knee: queueing is the truth there, so `capacity-saturation` is a right
   * answer, not a false alarm.
   */
  readonly pastKnee?: boolean;
  /** A fault too mild to move a user-visible figure on this load (noted, still measured). */
  readonly mild?: boolean;
}

const MODEL = 'fathom-sim-8b';
const chat = (extra: Record<string, unknown> = {}): CampaignSpecInput['scenario'] =>
  ({
    type: 'chat',
    model: MODEL,
    prompts: ['Explain KV caching.', 'Name three rivers.', 'Summarise the plot of Hamlet.'],
    maxTokens: 32,
    ...extra,
  }) as CampaignSpecInput['scenario'];

/**
 * The simulator decides per prompt whether an answer carries a hallucinated span (its draw is
 * keyed by the prompt's text and its seed): over three prompts a rate of 0.05 plants nothing in
 * 86 % of runs, and 0.3 in 34 %. Hallucination cells ask 48 distinct questions instead.
 */
const QUESTIONS = Array.from(
  { length: 48 },
  (_, i) => `Question ${i + 1}: explain one fact about topic ${i + 1}.`,
);

const nested = (depth: number) => `${'('.repeat(depth)}answer the innermost question${')'.repeat(depth)}`;

/** A weather step whose declared contract is the sim's own v1.9 document, pinned before the fault. */
const weatherContract = async (sim: SimProcess): Promise<CampaignSpecInput['scenario']> => {
  const doc = (await (await fetch(`${sim.url}/tools/weather/v1.9/openapi.json`)).json()) as Record<
    string,
    unknown
  >;
  return {
    type: 'http',
    steps: [
      {
        name: 'weather',
        method: 'POST',
        path: '/tools/weather/invoke',
        body: { city: 'Oslo' },
        contract: { responses: { 'v1.9': doc } },
      },
    ],
  } as CampaignSpecInput['scenario'];
};

const rerank: CampaignSpecInput['scenario'] = {
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
} as CampaignSpecInput['scenario'];

const agents: CampaignSpecInput['scenario'] = {
  type: 'agents',
  agents: 3,
  steps: 12,
} as CampaignSpecInput['scenario'];

const faultCell = (
  name: string,
  expected: string,
  fault: FaultSpecInput,
  extra: Partial<Cell> = {},
): Cell => ({
  name,
  expected,
  fault,
  scenario: chat(),
  concurrency: 4,
  base: '/v1',
  onset: 'random',
  ...extra,
});

/** Every fault cell of the matrix. */
export const FAULT_CELLS: readonly Cell[] = [
  faultCell('latency_spike 50 ms', 'engine-step-slowdown', { kind: 'latency_spike', addMs: 50 }),
  faultCell('latency_spike 500 ms', 'engine-step-slowdown', { kind: 'latency_spike', addMs: 500 }),
  faultCell(
    'kv_shrink 0.7',
    'kv-cache-pressure',
    { kind: 'kv_shrink', fraction: 0.7 },
    {
      scenario: chat({ maxTokens: 64 }),
      concurrency: 8,
      mild: true,
    },
  ),
  faultCell(
    'kv_shrink 0.3',
    'kv-cache-pressure',
    { kind: 'kv_shrink', fraction: 0.3 },
    {
      scenario: chat({ maxTokens: 64 }),
      concurrency: 8,
      mild: true,
    },
  ),
  faultCell(
    'kv_shrink 0.005',
    'kv-cache-pressure',
    { kind: 'kv_shrink', fraction: 0.005 },
    {
      scenario: chat({ maxTokens: 64 }),
      concurrency: 8,
    },
  ),
  faultCell(
    'hallucination_rate 0.05',
    'hallucination-rise',
    { kind: 'hallucination_rate', rate: 0.05 },
    {
      scenario: chat({ logprobs: true, topLogprobs: 5, prompts: QUESTIONS }),
      mild: true,
    },
  ),
  faultCell(
    'hallucination_rate 0.3',
    'hallucination-rise',
    { kind: 'hallucination_rate', rate: 0.3 },
    {
      scenario: chat({ logprobs: true, topLogprobs: 5, prompts: QUESTIONS }),
    },
  ),
  faultCell(
    'hallucination_rate 1',
    'hallucination-rise',
    { kind: 'hallucination_rate', rate: 1 },
    {
      scenario: chat({ logprobs: true, topLogprobs: 5, prompts: QUESTIONS }),
    },
  ),
  faultCell('http_5xx 1 %', 'server-errors', { kind: 'http_5xx', rate: 0.01, status: 503 }),
  faultCell('http_5xx 20 %', 'server-errors', { kind: 'http_5xx', rate: 0.2, status: 503 }),
  faultCell('rate_limit 5 %', 'rate-limited', { kind: 'rate_limit', rate: 0.05, retryAfterS: 2 }),
  faultCell('rate_limit 50 %', 'rate-limited', { kind: 'rate_limit', rate: 0.5, retryAfterS: 2 }),
  faultCell('stream_stall 1.5 s', 'stream-stall', { kind: 'stream_stall', afterTokens: 8, stallMs: 1500 }),
  faultCell(
    'reranker_saturation 32',
    'reranker-saturation',
    { kind: 'reranker_saturation', inUse: 32 },
    {
      scenario: rerank,
      base: '',
    },
  ),
  ...(['type_change', 'required_added', 'required_dropped'] as const).map((mode) =>
    faultCell(
      `schema_drift ${mode}`,
      'tool-schema-drift',
      { kind: 'schema_drift', mode, tool: 'weather' },
      {
        scenario: weatherContract,
        base: '',
      },
    ),
  ),
  faultCell(
    'agent_oscillation',
    'agent-oscillation',
    { kind: 'agent_oscillation' },
    {
      scenario: agents,
      concurrency: 2,
      base: '',
    },
  ),
  faultCell(
    'agent_deadlock',
    'agent-deadlock',
    { kind: 'agent_deadlock' },
    {
      scenario: agents,
      concurrency: 2,
      base: '',
    },
  ),
  ...[6, 12].map((depth): Cell => ({
    name: `prompt explosion depth ${depth}`,
    expected: 'prompt-explosion',
    fault: null,
    scenario: chat({ prompts: [nested(depth), 'Name three rivers.'] }),
    concurrency: 4,
    base: '/v1',
    onset: 'start',
  })),
];

/** Clean runs, light load to past the knee (the sim batches 32 sequences). */
export const CLEAN_CONCURRENCIES = [1, 2, 4, 8, 16, 24, 32, 40, 48, 64] as const;
export const cleanCell = (concurrency: number): Cell => ({
  name: `clean c=${concurrency}`,
  expected: null,
  fault: null,
  scenario: chat(),
  concurrency,
  base: '/v1',
  onset: 'random',
  pastKnee: concurrency > 32,
});

export interface NamedCause {
  readonly kind: string;
  /** ms from the onset to the cause first named (from the run's start for `onset: start`). */
  readonly afterOnsetMs: number;
  readonly confidence: number;
  /** The cause's figures as the report holds them. */
  readonly figures: Readonly<Record<string, number>>;
}

export interface Outcome {
  readonly cell: Cell;
  readonly seed: number;
  readonly runMs: number;
  /** ms from the run's start to the onset; 0 for `onset: start` and clean runs. */
  readonly onsetMs: number;
  readonly named: readonly NamedCause[];
  readonly top: string | null;
  readonly requests: number;
  /** Wall time of the whole run (sim start to report, ms) and of its parts: before the load started, after it ended. */
  readonly wall?: { readonly totalMs: number; readonly startMs: number; readonly finishMs: number };
  /** The generator's own health over the run's windows: what the client-bound gate read. */
  readonly client?: {
    readonly windows: number;
    readonly boundWindows: number;
    /** Windows whose host was starved (CPU busy and the engine thread delayed: `DiagnosisContext.clientLimited`). */
    readonly starvedWindows: number;
    readonly cpuBusyMedian: number;
    readonly loopDelayP99MaxMs: number;
  };
}

/** Mulberry32: the seeded onset of each run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RunOptions {
  /** Length of each run (ms). */
  readonly runMs: number;
  /** The onset is uniform in [min, max] ms after the run started. */
  readonly onsetMs: readonly [number, number];
  /** The simulator's time scale (model ms to wall ms). */
  readonly timeScale: number;
}

export const DEFAULT_RUN_OPTIONS: RunOptions = { runMs: 10_000, onsetMs: [2_500, 5_500], timeScale: 0.25 };

/** One run of one cell on the embedded Fathom against its own simulator. */
export async function runCell(
  fathom: EmbeddedFathom,
  cell: Cell,
  seed: number,
  options: RunOptions = DEFAULT_RUN_OPTIONS,
): Promise<Outcome> {
  const t0 = Date.now();
  // A clean target: the simulator's default plants a hallucinated span in a fifth of its answers
  // (keyed by prompt), so without this a hallucination cell's answers were risky before its onset.
  // Its own process: see startSimProcess.
  const sim = await startSimProcess({ timeScale: options.timeScale, seed, output: { hallucinationRate: 0 } });
  try {
    const scenario = typeof cell.scenario === 'function' ? await cell.scenario(sim) : cell.scenario;
    const { runId } = await fathom.campaigns.submit(
      {
        name: `detection: ${cell.name} #${seed}`,
        target: {
          baseUrl: `${sim.url}${cell.base}`,
          metricsUrls: [`${sim.url}/metrics`, `${sim.url}/dcgm/metrics`],
        },
        scenario,
        load: { concurrency: cell.concurrency, durationMs: options.runMs },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      } as never,
      'api',
    );
    let startedAt = Date.now();
    for (;;) {
      const run = await fathom.runs.get(runId);
      if (run && run.status !== 'pending') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    startedAt = Date.now();
    let onsetAt = startedAt;
    if (cell.fault && cell.onset === 'random') {
      const [min, max] = options.onsetMs;
      const wait = min + seeded(seed)() * (max - min);
      await new Promise((r) => setTimeout(r, wait));
      await sim.setFault(cell.fault);
      onsetAt = Date.now();
    }
    await waitForRun(fathom.runs, runId, { timeoutMs: options.runMs + 60_000 });
    const doneAt = Date.now();
    const stored = await fathom.fathom.app.get(RunReportRepository).latest(runId);
    if (!stored) throw new Error(`no report for ${cell.name} #${seed}`);
    const document = stored.document as unknown as RunReportDocument;
    return {
      cell,
      seed,
      runMs: options.runMs,
      onsetMs: onsetAt - startedAt,
      named: document.rootCauses.map((c) => ({
        kind: c.kind,
        afterOnsetMs: c.namedAt - onsetAt,
        confidence: c.confidence,
        figures: c.figures,
      })),
      top: document.rootCauses[0]?.kind ?? null,
      requests: document.summary.requests,
      client: await clientHealth(fathom, runId),
      wall: {
        totalMs: doneAt - t0,
        startMs: startedAt - t0,
        finishMs: doneAt - startedAt - options.runMs,
      },
    };
  } finally {
    await sim.close();
  }
}

/** The generator's health over a run's windows (what the causes' client-bound gate reads). */
async function clientHealth(fathom: EmbeddedFathom, runId: string): Promise<Outcome['client']> {
  const events = await fathom.fathom.app.get(RunEventRepository).listByRun(runId, { kind: 'window' });
  const health = events.flatMap((e) => {
    const h = (e.payload as unknown as TelemetryWindow).health;
    return h ? [h] : [];
  });
  if (!health.length) return undefined;
  const cpu = health.map((h) => h.cpuBusy).sort((a, b) => a - b);
  return {
    windows: health.length,
    boundWindows: health.filter((h) => clientBoundReason(h) !== null).length,
    starvedWindows: health.filter(
      (h) =>
        h.cpuBusy >= CauseThresholds.starvedHostCpuBusy &&
        h.loopDelayP99Ms >= CLIENT_BOUND_THRESHOLDS.loopDelayP99Ms,
    ).length,
    cpuBusyMedian: cpu[Math.floor(cpu.length / 2)],
    loopDelayP99MaxMs: Math.max(...health.map((h) => h.loopDelayP99Ms)),
  };
}

export interface ClassFigures {
  readonly kind: string;
  readonly runs: number;
  /** Runs of this class (strong cells only) whose report named the planted cause. */
  readonly recall: number | null;
  /** Mild cells apart: recall there is reported, not held to the goal. */
  readonly recallMild: number | null;
  /** Of the runs where this cause was named, the share where it was the planted one. */
  readonly precision: number | null;
  readonly timeToNameP50Ms: number | null;
  readonly timeToNameP95Ms: number | null;
}

export interface MatrixSummary {
  readonly classes: readonly ClassFigures[];
  /** Causes named on clean runs (capacity-saturation past the knee excepted) per clean minute. */
  readonly falseAlarmsPerCleanMinute: number;
  readonly falseAlarms: readonly string[];
  readonly cleanMinutes: number;
  /** Runs with a window the client limited (bound or starved): their latency causes are not claimed. */
  readonly clientLimitedRuns: number;
  /** planted class -> named cause -> runs (`(nothing)` when none). */
  readonly confusion: Record<string, Record<string, number>>;
  readonly perCell: readonly {
    name: string;
    runs: number;
    hits: number;
    p50: number | null;
    mild: boolean;
  }[];
}

const quantile = (values: number[], q: number): number | null => {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};

/** A planted cause counts when named after the onset (a cause named before it was not this fault). */
const namedAfterOnset = (o: Outcome, kind: string) =>
  o.named.find((c) => c.kind === kind && (o.cell.onset === 'start' || c.afterOnsetMs >= 0));

export function summarise(outcomes: readonly Outcome[]): MatrixSummary {
  const kinds = [...new Set(outcomes.flatMap((o) => (o.cell.expected ? [o.cell.expected] : [])))];
  if (outcomes.some((o) => o.cell.pastKnee)) kinds.push('capacity-saturation');
  const truthOf = (o: Outcome): string | null =>
    o.cell.expected ?? (o.cell.pastKnee ? 'capacity-saturation' : null);
  const classes = kinds.map((kind): ClassFigures => {
    const planted = outcomes.filter((o) => truthOf(o) === kind);
    const strong = planted.filter((o) => !o.cell.mild);
    const mild = planted.filter((o) => o.cell.mild);
    const hits = strong.filter((o) => namedAfterOnset(o, kind));
    const times = hits.map((o) => Math.max(0, namedAfterOnset(o, kind)!.afterOnsetMs));
    const namedRuns = outcomes.filter((o) => o.named.some((c) => c.kind === kind));
    return {
      kind,
      runs: planted.length,
      recall: strong.length ? hits.length / strong.length : null,
      recallMild: mild.length ? mild.filter((o) => namedAfterOnset(o, kind)).length / mild.length : null,
      precision: namedRuns.length
        ? namedRuns.filter((o) => truthOf(o) === kind).length / namedRuns.length
        : null,
      timeToNameP50Ms: quantile(times, 0.5),
      timeToNameP95Ms: quantile(times, 0.95),
    };
  });
  const clean = outcomes.filter((o) => o.cell.expected === null);
  const falseAlarms = clean.flatMap((o) =>
    o.named
      .filter((c) => !(o.cell.pastKnee && c.kind === 'capacity-saturation'))
      .map((c) => `${o.cell.name}#${o.seed}: ${c.kind}`),
  );
  const cleanMinutes = clean.reduce((m, o) => m + o.runMs / 60_000, 0);
  const confusion: Record<string, Record<string, number>> = {};
  for (const o of outcomes) {
    const row = (confusion[o.cell.expected ?? (o.cell.pastKnee ? 'clean past knee' : 'clean')] ??= {});
    const named = o.named.length ? [...new Set(o.named.map((c) => c.kind))] : ['(nothing)'];
    for (const k of named) row[k] = (row[k] ?? 0) + 1;
  }
  const cells = [...new Set(outcomes.map((o) => o.cell.name))];
  const perCell = cells.map((name) => {
    const of = outcomes.filter((o) => o.cell.name === name);
    const kind = truthOf(of[0]);
    const hit = kind ? of.filter((o) => namedAfterOnset(o, kind)) : of.filter((o) => o.named.length === 0);
    const times = kind ? hit.map((o) => namedAfterOnset(o, kind)!.afterOnsetMs) : [];
    return {
      name,
      runs: of.length,
      hits: hit.length,
      p50: quantile(times, 0.5),
      mild: of[0].cell.mild === true,
    };
  });
  return {
    classes,
    falseAlarmsPerCleanMinute: cleanMinutes ? falseAlarms.length / cleanMinutes : 0,
    falseAlarms,
    cleanMinutes,
    clientLimitedRuns: outcomes.filter((o) => o.client && o.client.boundWindows + o.client.starvedWindows > 0)
      .length,
    confusion,
    perCell,
  };
}

const f = (x: number | null, digits = 2) => (x === null ? 'n/a' : x.toFixed(digits));
const s = (ms: number | null) => (ms === null ? 'n/a' : `${(ms / 1000).toFixed(1)} s`);

/** The summary as the tables RESULTS.md keeps. */
export function formatSummary(summary: MatrixSummary): string {
  const lines = [
    '| class | runs | recall | recall (mild cells) | precision | time to name P50 | P95 |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...summary.classes.map(
      (c) =>
        `| ${c.kind} | ${c.runs} | ${f(c.recall)} | ${f(c.recallMild)} | ${f(c.precision)} | ${s(c.timeToNameP50Ms)} | ${s(c.timeToNameP95Ms)} |`,
    ),
    '',
    `Runs with a window the client limited (bound or host starved; no latency cause claimed there): ${summary.clientLimitedRuns}`,
    '',
    `False alarms on clean runs: ${summary.falseAlarms.length} in ${summary.cleanMinutes.toFixed(1)} clean minutes = ${summary.falseAlarmsPerCleanMinute.toFixed(2)} per clean minute${summary.falseAlarms.length ? ` (${summary.falseAlarms.join('; ')})` : ''}`,
    '',
    '| cell | runs | named | P50 |',
    '| --- | --- | --- | --- |',
    ...summary.perCell.map(
      (c) => `| ${c.name}${c.mild ? ' (mild)' : ''} | ${c.runs} | ${c.hits} | ${s(c.p50)} |`,
    ),
    '',
    'Confusion (planted -> named, runs; a run may name several):',
    '',
    ...Object.entries(summary.confusion).map(
      ([planted, row]) =>
        `- ${planted}: ${Object.entries(row)
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}`,
    ),
  ];
  return lines.join('\n');
}
