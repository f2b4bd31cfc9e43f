import {
  Topics,
  type BreakerChange,
  type CampaignSpec,
  type DetectorSignal,
  type GpuTelemetry,
  type LoadPhase,
  type RootCauseChange,
  type RunLifecycle,
  type SloTierChange,
  type TelemetryWindow,
  type TokenStatsBatchSignal,
  type TokenStatsEntry,
  type TokenStatsSignal,
} from '@fathom/contracts';
import type { RecordDigest } from '@fathom/analysis';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import type { RunEventRecord } from '@fathom/storage';
import type { DigestBatch, StoredKind } from './run-event.store';

export const STORED_RUN_T0 = 1_700_000_000_000;

/** Deterministic figures (a linear congruential generator): the same run every time. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function histogramOf(valuesMs: readonly number[]): string {
  const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
  for (const ms of valuesMs) h.recordValue(Math.max(1, Math.round(ms * 1000)));
  return encodeHistogram(h);
}

/** A three-step rate sweep (warm-up in its first step, cool-down in its last) of `seconds` per step. */
function phaseAt(second: number, seconds: number): LoadPhase {
  const index = Math.min(2, Math.floor(second / seconds));
  const into = second - index * seconds;
  const segment =
    index === 0 && into < 2 ? 'warmup' : index === 2 && into >= seconds - 2 ? 'cooldown' : 'measured';
  return { index, kind: 'rate', segment, ratePerSec: 2 ** (index + 1), elapsedMs: (into + 1) * 1000 };
}

/**
 * Every kind of event the analyzer stores for one run of two shards, as `RunEventStore.save`
 * stores them: windows, digest batches, token-stats batches (a few stored before the batching,
 * one per record, some before their digest, some without one), GPU scrapes (one failed),
 * detector signals, tier, breaker and root-cause changes, lifecycle events. Ids and times are
 * fixed, several events share a millisecond, so paging must keep the store's order exactly.
 */
export function storedRunEvents(runId: string, stepSeconds = 6): RunEventRecord[] {
  const random = lcg(14);
  const campaignId = 'c-paged';
  const seconds = stepSeconds * 3;
  const shards = 2;
  const events: RunEventRecord[] = [];
  const env = (id: string, emittedAt: number) => ({
    id,
    schemaVersion: 1 as const,
    campaignId,
    runId,
    emittedAt,
  });
  const add = <P extends { id: string; emittedAt: number }>(kind: StoredKind, topic: string, payload: P) =>
    events.push({
      eventId: payload.id,
      runId,
      topic,
      kind,
      occurredAt: payload.emittedAt,
      payload: payload as never,
    });
  const spec = {
    name: 'paged report',
    target: { baseUrl: 'http://127.0.0.1:8000/v1', apiKey: 'sk-secret', metricsUrls: [] },
    scenario: { type: 'chat', prompts: ['hi'], maxTokens: 16 },
    load: { concurrency: 4, durationMs: seconds * 1000 },
    slo: { p99Ms: 900, maxErrorRate: 0.05 },
    report: { percentiles: [50, 90, 99] },
  } as unknown as CampaignSpec;
  for (let shard = 0; shard < shards; shard++) {
    add('shard-command', Topics.runShard.name, {
      ...env(`cmd-${shard}`, STORED_RUN_T0 - 10),
      spec,
      shard: { index: shard, count: shards },
    } as never);
  }
  const counts = { sent: 0, completed: 0, errors: 0, dropped: 0, recordsPublished: 0, windowsPublished: 0 };
  const lifecycle = (
    phase: RunLifecycle['phase'],
    shard: number,
    at: number,
    records: number,
  ): RunLifecycle => ({
    ...env(`life-${phase}-${shard}`, at),
    phase,
    shard: { index: shard, count: shards },
    generatorId: `gen-${shard}`,
    counts: {
      ...counts,
      recordsPublished: records,
      windowsPublished: phase === 'shard-started' ? 0 : seconds,
    },
    ...(phase === 'shard-started' ? {} : { endReason: 'duration' as const }),
  });
  const records = [0, 0];
  for (let second = 0; second < seconds; second++) {
    const phase = phaseAt(second, stepSeconds);
    for (let shard = 0; shard < shards; shard++) {
      const windowStart = STORED_RUN_T0 + second * 1000;
      const requests = 6 + Math.floor(random() * 6) + phase.index * 3;
      const errors = random() < 0.2 ? 1 : 0;
      const latencies = Array.from({ length: requests }, () => 80 + random() * 400 * (phase.index + 1));
      const histogram = histogramOf(latencies);
      const window: TelemetryWindow = {
        ...env(`win-${shard}-${second}`, windowStart + 1000),
        generatorId: `gen-${shard}`,
        shard,
        windowStart,
        windowMs: 1000,
        seq: second,
        requests,
        errors,
        errorClasses: errors ? { 'http-5xx': errors } : {},
        dropped: 0,
        late: 0,
        inputTokens: requests * 10,
        outputTokens: requests * 16,
        histogramsUs: {
          e2e: histogram,
          correctedE2e: histogram,
          ttft: histogramOf(latencies.map((ms) => ms / 4)),
          itl: histogramOf(latencies.map((ms) => ms / 40)),
          tpot: histogramOf(latencies.map((ms) => ms / 30)),
        },
        phase,
      } as TelemetryWindow;
      add('window', Topics.telemetryWindow.name, window);
      // Records: a sample of the window's requests, each with a digest and (mostly) token stats.
      const digests: RecordDigest[] = [];
      const entries: TokenStatsEntry[] = [];
      for (let k = 0; k < Math.min(requests, 4); k++) {
        const requestId = `req-${shard}-${second}-${k}`;
        const e2eMs = latencies[k];
        const at = windowStart + 100 + Math.floor(random() * 880);
        const outputTokens = 8 + Math.floor(random() * 24);
        const ok = !(errors && k === 0);
        // A record the digest batch was lost of: its token stats are judged, never bucketed.
        if (!(second === 3 && k === 1))
          digests.push({
            requestId,
            status: ok ? 200 : 503,
            correctedE2eMs: e2eMs,
            inputTokens: 10,
            at,
            startedAt: at - e2eMs,
            lateMs: 0,
            ok,
            errorClass: ok ? null : 'http-5xx',
            e2eMs,
            ttftMs: e2eMs / 4,
            gapMaxMs: 5 + random() * 2000,
            gapMedianMs: 2 + random() * 3,
            tokenMismatch: k === 2 ? 1 : 0,
            outputTokens,
            riskSegments: k === 3 ? 1 : 0,
            maxWindowEntropyBits: 1 + random() * 3,
            calls: [],
          });
        const gapCount = k === 1 && second % 2 ? 0 : outputTokens - 1;
        entries.push({
          requestId,
          ...(second % 5 === 4 && shard === 1
            ? {}
            : { phase: { index: phase.index, segment: phase.segment } }),
          outputTokens,
          chunks: outputTokens + (k === 2 ? 1 : 0),
          gapCount,
          gapMeanMs: gapCount ? 1.5 + random() * 20 : null,
          gapMaxMs: gapCount ? 5 + random() * 40 : null,
          tokenCountMismatch: k === 2 ? (second % 3) - 1 : k === 3 ? null : 0,
          assessment: ok ? (k === 3 ? 'no-top-logprobs' : 'ok') : 'error',
          meanEntropyBits: k === 3 ? null : random() * 2,
          latencySloMet: ok ? e2eMs < 600 || (k === 3 ? null : false) : false,
          ...(k === 1 && second % 4 === 0
            ? {}
            : { checks: { 'hallucination-risk': random() > 0.3, schema: k !== 2 } }),
          ...(k === 0 && second % 7 === 1
            ? {
                tokenSample: {
                  rows: [
                    { token: 'Paris', entropyBits: 0.2, margin: 0.9, risk: 'low' as const },
                    { token: 'maybe', entropyBits: 3.5, margin: 0.05, risk: 'high' as const },
                  ],
                  truncated: false,
                  spans: second % 2 ? [{ start: 1, end: 2 }] : [],
                },
              }
            : {}),
        });
      }
      records[shard] += entries.length;
      const digestBatch: DigestBatch = {
        ...env(`dig-${shard}-${second}`, windowStart + 1000),
        digests,
      };
      add('digest', Topics.requestTelemetry.name, digestBatch);
      // The monitor's stats of a batch usually follow its digests; every fifth second they come first.
      const statsAt = windowStart + (second % 5 === 0 ? 999 : 1000 + Math.floor(random() * 3));
      if (second < 2) {
        // Stored before the batching: one signal per record.
        for (const entry of entries)
          add('token-stats', Topics.semanticSignal.name, {
            ...env(`ts-${entry.requestId}`, statsAt),
            kind: 'token-stats',
            ...entry,
          } satisfies TokenStatsSignal);
      } else {
        add('token-stats', Topics.semanticSignal.name, {
          ...env(`tsb-${shard}-${second}`, statsAt),
          kind: 'token-stats-batch',
          stats: entries,
        } satisfies TokenStatsBatchSignal);
      }
    }
    if (second % 2 === 0) {
      const scrape: GpuTelemetry = {
        ...env(`gpu-${second}`, STORED_RUN_T0 + second * 1000 + 500),
        source: 'vllm',
        url: 'http://127.0.0.1:8000/metrics',
        scrapedAt: STORED_RUN_T0 + second * 1000 + 500,
        health: second === 8 ? 'timeout' : 'ok',
        samples:
          second === 8
            ? []
            : [
                { gpu: '0', instance: null, metric: 'kv_cache_usage_ratio', value: random(), unit: 'ratio' },
                { gpu: '0', instance: null, metric: 'requests_running', value: 4 + second, unit: 'count' },
                { gpu: '0', instance: null, metric: 'sm_active_ratio', value: random(), unit: 'ratio' },
              ],
      };
      add('gpu', Topics.gpuTelemetry.name, scrape);
    }
  }
  const detector = (
    id: string,
    at: number,
    detector: string,
    figures: Record<string, number>,
  ): DetectorSignal => ({
    ...env(id, at),
    kind: 'detector',
    detector,
    requestId: null,
    severity: 'warning',
    message: `${detector} fired`,
    figures,
  });
  add(
    'semantic',
    Topics.semanticSignal.name,
    detector('det-1', STORED_RUN_T0 + 4_200, 'token-gap', { gapMs: 2100 }),
  );
  add(
    'semantic',
    Topics.semanticSignal.name,
    detector('det-2', STORED_RUN_T0 + seconds * 1000 + 5, 'semantic-goodput', { embedded: 31, judged: 40 }),
  );
  const tiers: SloTierChange[] = [
    {
      ...env('tier-1', STORED_RUN_T0 + 2_000),
      from: null,
      to: 'SLO-0',
      reason: 'all objectives hold',
      figures: {},
    },
    {
      ...env('tier-2', STORED_RUN_T0 + 9_000),
      from: 'SLO-0',
      to: 'SLO-1',
      reason: 'p99 over 800 ms',
      figures: { p99Ms: 950 },
      objective: 'latency',
    },
  ];
  for (const t of tiers) add('tier', Topics.sloTier.name, t);
  const breaker: BreakerChange = {
    ...env('brk-1', STORED_RUN_T0 + 7_000),
    breaker: { target: spec.target.baseUrl, layer: 'llm', node: '127.0.0.1:8000' },
    from: 'closed',
    to: 'open',
    reason: 'failure rate 60 %',
  };
  add('breaker', Topics.breaker.name, breaker);
  const cause: RootCauseChange = {
    ...env('cause-1', STORED_RUN_T0 + 8_000),
    top: 'kv-cache-pressure',
    causes: [
      {
        kind: 'kv-cache-pressure',
        title: 'KV cache pressure',
        confidence: 0.7,
        since: STORED_RUN_T0 + 6_000,
        until: STORED_RUN_T0 + 8_000,
        evidence: ['kv usage 0.97'],
        figures: { kvUsage: 0.97 },
        advice: ['lower max_num_seqs'],
      },
    ],
  };
  add('cause', Topics.rootCause.name, cause);
  for (let shard = 0; shard < shards; shard++) {
    add('lifecycle', Topics.runLifecycle.name, lifecycle('shard-started', shard, STORED_RUN_T0, 0));
    add(
      'lifecycle',
      Topics.runLifecycle.name,
      lifecycle('shard-finished', shard, STORED_RUN_T0 + seconds * 1000 + shard, records[shard]),
    );
  }
  return events;
}
