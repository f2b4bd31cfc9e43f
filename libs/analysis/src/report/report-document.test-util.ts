import {
  envelope,
  type CampaignSpec,
  type DetectorSignal,
  type TelemetryWindow,
  type TokenStatsBatchSignal,
  type TokenStatsSignal,
} from '@fathom/contracts';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import { RunTimeline } from '../evidence/run-timeline';
import type { RecordDigest } from '../evidence/record-digest';
import { DEFAULT_TIER_POLICY } from '../objectives/tier.policy';
import { buildRunSummary } from './run-summary.builder';
import { buildRunReportDocument, type RunReportDocument } from './run-report.document';
import {
  TokenStatsAccumulator,
  type TokenStatsFigures,
  type TokenStatsPlacement,
} from './token-stats.accumulator';

export const T0 = 1_700_000_000_000;

/** Token stats folded as the analyzer folds them, in one go; no windows or digests: no bucket. */
export function foldTokenStats(
  stats: readonly (TokenStatsSignal | TokenStatsBatchSignal)[],
  placement: TokenStatsPlacement = { windows: [], digests: [] },
): TokenStatsFigures {
  const accumulator = new TokenStatsAccumulator(placement);
  for (const s of stats) accumulator.add(s);
  return accumulator.figures();
}

export interface FixtureRun {
  readonly runId?: string;
  /** Latency of every request of window i (ms). */
  readonly latencyMs: (i: number) => number;
  readonly windows?: number;
  readonly requestsPerWindow?: number;
  readonly errorsPerWindow?: number;
  readonly slo?: CampaignSpec['slo'];
  /** Two generators per second instead of one. */
  readonly generators?: number;
  readonly name?: string;
  readonly detectorMessage?: string;
}

function histogramOf(values: number[]): string {
  const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
  for (const ms of values) h.recordValue(Math.max(1, Math.round(ms * 1000)));
  return encodeHistogram(h);
}

/**
 * A run's report document built the way the analyzer builds it (timeline, summary, series),
 * from windows whose latency `latencyMs(i)` fixes: for tests of the exports, the comparison
 * and the HTML page.
 */
export function fixtureReport(run: FixtureRun): RunReportDocument {
  const runId = run.runId ?? 'run-1';
  const windows = run.windows ?? 10;
  const perWindow = run.requestsPerWindow ?? 20;
  const errors = run.errorsPerWindow ?? 0;
  const generators = run.generators ?? 1;
  const spec = {
    name: run.name ?? 'fixture',
    target: { baseUrl: 'http://127.0.0.1:8000/v1', apiKey: 'sk-secret', metricsUrls: [] },
    scenario: { type: 'chat', prompts: ['hi'], maxTokens: 16 },
    load: { concurrency: 4, durationMs: windows * 1000 },
    slo: run.slo ?? { p99Ms: 1000, maxErrorRate: 0.05 },
  } as unknown as CampaignSpec;
  const timeline = new RunTimeline();
  const all: TelemetryWindow[] = [];
  const digests: RecordDigest[] = [];
  const tokenStats: TokenStatsSignal[] = [];
  for (let seq = 0; seq < windows; seq++) {
    for (let g = 0; g < generators; g++) {
      const ms = run.latencyMs(seq);
      const latency = histogramOf(
        Array.from({ length: perWindow }, (_, k) => ms * (1 + k / (10 * perWindow))),
      );
      const window: TelemetryWindow = {
        ...envelope('c-1', runId, T0 + 1000 * (seq + 1)),
        generatorId: `g${g}`,
        shard: 0,
        windowStart: T0 + 1000 * seq,
        windowMs: 1000,
        seq,
        requests: perWindow,
        errors,
        errorClasses: errors ? { 'http-5xx': errors } : {},
        dropped: 0,
        late: 0,
        inputTokens: perWindow * 10,
        outputTokens: perWindow * 16,
        histogramsUs: { e2e: latency, correctedE2e: latency, ttft: latency, itl: latency },
      };
      all.push(window);
      timeline.addWindow(window);
    }
    for (let k = 0; k < 2; k++) {
      const requestId = `r-${seq}-${k}`;
      const at = T0 + 1000 * seq + 500 + k;
      digests.push({
        requestId,
        status: 200,
        correctedE2eMs: run.latencyMs(seq),
        inputTokens: 10,
        at,
        startedAt: at - run.latencyMs(seq),
        lateMs: 0,
        ok: true,
        errorClass: null,
        e2eMs: run.latencyMs(seq),
        ttftMs: 20,
        gapMaxMs: 5,
        gapMedianMs: 2,
        tokenMismatch: 0,
        outputTokens: 16,
        riskSegments: k,
        maxWindowEntropyBits: 1 + k * 3,
        calls: [],
      });
      tokenStats.push({
        ...envelope('c-1', runId, at + 10),
        kind: 'token-stats',
        requestId,
        outputTokens: 16,
        chunks: 16,
        gapCount: 15,
        gapMeanMs: 2,
        gapMaxMs: 5,
        tokenCountMismatch: 0,
        assessment: 'ok',
        latencySloMet: true,
        checks: { 'hallucination-risk': k === 0 },
        ...(seq === 0
          ? {
              tokenSample: {
                rows: [
                  { token: 'Paris', entropyBits: 0.2, margin: 0.9, risk: 'low' as const },
                  { token: '<script>x</script>', entropyBits: 4.5, margin: 0.01, risk: 'high' as const },
                ],
                truncated: false,
                spans: k ? [{ start: 1, end: 2 }] : [],
              },
            }
          : {}),
      });
    }
  }
  timeline.addDigests(digests);
  const detector: DetectorSignal = {
    ...envelope('c-1', runId, T0 + 2500),
    kind: 'detector',
    detector: 'prompt-explosion',
    requestId: 'r-2-0',
    severity: 'critical',
    message: run.detectorMessage ?? 'prompt explosion (depth): depth 7',
    figures: { depth: 7 },
  };
  timeline.addDetector(detector);
  const folded = foldTokenStats(tokenStats, timeline);
  const lifecycle = [
    { ...envelope('c-1', runId, T0), phase: 'shard-started' },
    { ...envelope('c-1', runId, T0 + windows * 1000), phase: 'shard-finished' },
  ] as never;
  const tierChanges = [
    {
      ...envelope('c-1', runId, T0 + 1000),
      from: null,
      to: 'SLO-0',
      reason: 'all objectives hold',
      figures: {},
    },
  ];
  const summary = buildRunSummary({
    spec,
    lifecycle,
    windows: all,
    tokenStats: folded,
    detectorSignals: 1,
    gpu: [],
    tierChanges,
    aborted: false,
  });
  return buildRunReportDocument({
    runId,
    campaignId: 'c-1',
    summary,
    timeline,
    tiers: DEFAULT_TIER_POLICY.tiers,
    tierChanges,
    breakerChanges: [
      {
        ...envelope('c-1', runId, T0 + 3000),
        breaker: { target: spec.target.baseUrl, layer: 'llm', node: '127.0.0.1:8000' },
        from: 'closed',
        to: 'open',
        reason: 'failure rate 60 %',
      },
    ],
    rootCauses: [],
    validity: { valid: true, reasons: [] },
    stallMs: 2000,
    spec,
    tokenStats: folded,
  });
}
