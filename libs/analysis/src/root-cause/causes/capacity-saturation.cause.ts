import type { RootCauseCause } from '@fathom/contracts';
import { gpuCounterIncrease, gpuMax, gpuMean, gpuSeries, type GpuPoint } from '../../evidence/run-timeline';
import { CauseThresholds } from '../cause-thresholds.constant';
import { iso, ms, type DiagnosisContext } from '../diagnosis.context';

/**
 * Capacity and queueing: the target is saturated. Requests stand in the server's queue
 * (`requests_waiting` at least `queueWaitingMean` on average and in `queueStandingShare` of the
 * scrapes of the steady recent span), the
 * KV cache is not what limits admission (that is `kv-cache-pressure`), and decode holds (no
 * inter-token jump: a slower step is `engine-step-slowdown`), so the first hop (TTFT) carries the
 * wait, and users feel it (TTFT over the P99 budget or jumped from its baseline). Says where it started (the first scrape from which the queue stood), the load then
 * (requests in flight among the records, their start rate) and the batch the server ran.
 */
export function capacitySaturationCause(ctx: DiagnosisContext, kvPressure: boolean): RootCauseCause | null {
  const { steady, options } = ctx;
  // A target starved on the generator's host, or a starved client, queues without being the limit.
  if (!steady || kvPressure || ctx.clientLimited !== null) return null;
  const waiting = gpuMean(steady.gpu, 'requests_waiting');
  if (waiting === null || waiting < CauseThresholds.queueWaitingMean) return null;
  const scrapes = gpuSeries(steady.gpu, 'requests_waiting');
  const standing = scrapes.filter((p) => p.value >= CauseThresholds.queueWaitingMean).length / scrapes.length;
  if (standing < CauseThresholds.queueStandingShare) return null;
  const kvMax = gpuMax(steady.gpu, 'kv_cache_usage_ratio');
  if (kvMax !== null && kvMax >= CauseThresholds.kvUsagePeak) return null;
  if (ctx.itlJump !== null && ctx.itlJump >= options.jumpFactor) return null;
  // A queue is a cause only once users feel it: the first hop over the budget or jumped from
  // its baseline, or, for a run over capacity from its first second (no baseline to jump from,
  // no budget set), the server's own clock says requests spent a real share of their time queued.
  const ttftJumped = ctx.ttftJump !== null && ctx.ttftJump >= options.jumpFactor;
  const queueShare = serverQueueShare(steady.gpu);
  const queueFelt = queueShare !== null && queueShare >= CauseThresholds.queueTimeShare;
  if (ctx.ttft === null || !(ctx.overBudget || ttftJumped || queueFelt)) return null;
  const running = gpuMax(steady.gpu, 'requests_running');

  // Onset: the first scrape of the run from which the queue stood (it and the next one waiting).
  const series = gpuSeries(ctx.timeline.span(ctx.startMs - 1, ctx.nowMs).gpu, 'requests_waiting');
  let onset = steady.fromMs;
  for (let i = 0; i < series.length; i++) {
    const standing = (p: { value: number } | undefined) =>
      p === undefined || p.value >= CauseThresholds.queueWaitingMean;
    if (standing(series[i]) && standing(series[i + 1])) {
      onset = series[i].at;
      break;
    }
  }
  const around = ctx.timeline.span(onset - 1_000, Math.max(ctx.nowMs, onset + 60_000)).digests;
  const inFlight = around.filter((d) => d.startedAt <= onset && d.at > onset).length;
  const startedPerS = around.filter((d) => d.startedAt > onset - 1_000 && d.startedAt <= onset).length;
  const confidence = Math.min(
    1,
    0.5 + (ctx.overBudget ? 0.2 : 0) + (ttftJumped ? 0.1 : 0) + (queueFelt ? 0.1 : 0),
  );
  const batch = running === null ? 'its batch' : `a batch of ${running.toFixed(0)}`;
  return {
    kind: 'capacity-saturation',
    title:
      'the target is saturated: requests queue for a batch slot, so time to first token climbs while decode holds',
    confidence,
    since: onset,
    until: steady.toMs,
    evidence: [
      ctx.flowHead,
      `${waiting.toFixed(1)} requests waiting on average, ${running === null ? 'no running count' : `${running.toFixed(0)} running at most`}; KV-cache usage peak ${kvMax === null ? 'n/a' : `${(kvMax * 100).toFixed(0)} %`}: not the limit`,
      `first hop (TTFT P99) ${ms(ctx.ttft)} vs baseline ${ms(ctx.ttftBase)}; decode (ITL P50) ${ms(ctx.itl)} vs baseline ${ms(ctx.itlBase)}: holds`,
      queueShare === null
        ? 'the server reports no queue time'
        : `the server's own clock: ${(queueShare * 100).toFixed(0)} % of each request's time spent queued (vllm:request_queue_time over vllm:e2e_request_latency)`,
      `the queue stood from ${iso(onset)}, with ${inFlight} requests in flight (records seen) and ${startedPerS} started in the second before`,
    ],
    figures: {
      waitingMean: waiting,
      ...(running !== null ? { runningMax: running } : {}),
      ...(kvMax !== null ? { kvUsagePeak: kvMax } : {}),
      ...(ctx.ttft !== null ? { ttftP99Ms: ctx.ttft } : {}),
      ...(ctx.itl !== null ? { itlP50Ms: ctx.itl } : {}),
      ...(queueShare !== null ? { serverQueueShare: queueShare } : {}),
      inFlightAtOnset: inFlight,
      startedPerSAtOnset: startedPerS,
    },
    thresholds: [
      {
        name: 'requests waiting, mean',
        value: CauseThresholds.queueWaitingMean,
        source: 'simulator',
        note: 'a standing queue; set on the simulator past its knee',
      },
      {
        name: 'share of scrapes with a request waiting',
        value: CauseThresholds.queueStandingShare,
        source: 'simulator',
        note: "set on bench/detection's clean runs (a starved simulator queues in bursts)",
      },
      ...(queueFelt && !ctx.overBudget && !ttftJumped
        ? [
            {
              name: "share of the server's request time spent queued",
              value: CauseThresholds.queueTimeShare,
              source: 'simulator' as const,
              note: 'our choice (a batch of B reaches it with about B/9 streams more than it), checked on the simulator only',
            },
          ]
        : []),
    ],
    advice: [
      `fewer streams: the server ran ${batch}; keep the concurrency at or under it (${inFlight} were in flight when the queue formed)`,
      'more replicas behind a load balancer for this load',
      'a bigger batch budget (--max-num-seqs, --max-num-batched-tokens) where the KV cache allows it',
    ],
  };
}

/** The server's mean queue time over its mean request time across the points; null without both histograms. */
function serverQueueShare(points: readonly GpuPoint[]): number | null {
  const queued = gpuCounterIncrease(points, 'queue_sum_s');
  const total = gpuCounterIncrease(points, 'e2e_sum_s');
  return queued === null || total === null || total <= 0 ? null : Math.min(1, queued / total);
}
