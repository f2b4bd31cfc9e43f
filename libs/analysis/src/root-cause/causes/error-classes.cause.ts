import { minOf, maxOf, type RootCauseCause } from '@fathom/contracts';
import type { RecordDigest } from '../../evidence/record-digest';
import { CauseThresholds } from '../cause-thresholds.constant';
import { iso, pct, type DiagnosisContext, type TimedCall } from '../diagnosis.context';

/**
 * Failed calls by class, each its own cause: 5xx answers, 429 rate limiting, timeouts, connection
 * errors. Each is judged over the error span (`CauseThresholds.errorWindowMs`, warm-up included)
 * so a rate of 1 % still counts, and named when its share costs tier SLO-1's availability (spec:
 * 99.5 %): for a status the target answered (5xx, 429) from the first one, for what the client
 * judged (timeouts, connection errors) with at least `errorMinCount` of them and not while the
 * client was limited; the cause says its share, its count, when it started in that span and an
 * example.
 */
interface ErrorClassRule {
  readonly kind: string;
  readonly title: string;
  /** The failed calls of this class among the span's calls. */
  readonly select: (call: TimedCall, digest: RecordDigest) => boolean;
  readonly what: string;
  readonly advice: (failed: readonly TimedCall[]) => string[];
  readonly figures?: (failed: readonly TimedCall[]) => Record<string, number>;
  readonly evidence?: (failed: readonly TimedCall[]) => string[];
  /**
   * The target's own answer (a status it sent): one is a fact, named once its share costs the
   * availability. Else judged by the client (timeouts, connections): `errorMinCount` of them, and
   * not while the client was limited, whose own stalls time requests out.
   */
  readonly answered: boolean;
}

/** The seconds a 429 asks to wait: `Retry-After: n` or OpenAI's "Please try again in 1.5s / 20ms". */
export function retryAfterSeconds(text: string | undefined): number | null {
  if (!text) return null;
  const m =
    /retry[- ]after["']?\s*[:=]?\s*(\d+(?:\.\d+)?)\s*(ms|s)?/i.exec(text) ??
    /try again in\s+(\d+(?:\.\d+)?)\s*(ms|s)\b/i.exec(text);
  if (!m) return null;
  const value = Number(m[1]);
  return m[2]?.toLowerCase() === 'ms' ? value / 1000 : value;
}

/** The waits the 429s asked for: the `Retry-After` header, else what the error text says. */
function retryAfterWaits(failed: readonly TimedCall[]): number[] {
  return failed
    .map((c) => c.retryAfterS ?? retryAfterSeconds(c.error))
    .filter((s): s is number => s !== null);
}

const RULES: readonly ErrorClassRule[] = [
  {
    kind: 'server-errors',
    title: 'the target answers with 5xx errors',
    // A rerank 503 is the reranker's cap refusing (spec: fail fast "reranker busy"), named on its own.
    select: (c) => !c.ok && c.status >= 500 && !(c.layer === 'rerank' && c.status === 503),
    what: 'failed with 5xx',
    answered: true,
    advice: () => [
      'read the server log for the failing requests; check health checks and restarts of the engine',
    ],
  },
  {
    kind: 'rate-limited',
    title: 'the target rate-limits the load (429 Too Many Requests): these are refusals, not server faults',
    select: (c) => !c.ok && c.status === 429,
    what: 'refused with 429',
    answered: true,
    figures: (failed): Record<string, number> => {
      const waits = retryAfterWaits(failed);
      const fromHeader = failed.filter((c) => c.retryAfterS !== undefined).length;
      return waits.length
        ? {
            retryAfterMaxS: maxOf(waits),
            retryAfterShare: waits.length / failed.length,
            retryAfterHeaderShare: fromHeader / failed.length,
          }
        : {};
    },
    evidence: (failed) => {
      const waits = retryAfterWaits(failed);
      const fromHeader = failed.filter((c) => c.retryAfterS !== undefined).length;
      if (!waits.length) return ['no Retry-After on the 429 answers'];
      return [
        `Retry-After on ${waits.length}/${failed.length} answers (${fromHeader} from the header${fromHeader < waits.length ? ', the rest read from the error text' : ''}): ${minOf(waits)}-${maxOf(waits)} s`,
      ];
    },
    advice: (failed) => {
      const waits = retryAfterWaits(failed);
      return [
        waits.length
          ? `honour Retry-After (the target asked to wait up to ${maxOf(waits)} s) and lower the request or token rate below the quota`
          : 'lower the request or token rate below the quota, or back off on 429',
        'raise the quota (rate-limit tier) for the key under test, or spread the load over several keys only if production does the same',
      ];
    },
  },
  {
    kind: 'request-timeouts',
    title: 'requests time out before the target answers completely',
    select: (c, d) => !c.ok && d.errorClass === 'timeout',
    what: 'timed out',
    answered: false,
    advice: () => [
      'compare the timeout with the latency the target reaches under this load: a queueing target (see capacity) needs fewer streams, a slow stream a longer timeout',
      'check the target and any proxy between for stalled connections (idle timeouts, slow upstreams)',
    ],
  },
  {
    kind: 'connection-errors',
    title: 'connections to the target fail (refused, reset or unreachable)',
    select: (c, d) => !c.ok && d.errorClass === 'connect',
    what: 'could not connect or were reset before an answer',
    answered: false,
    advice: () => [
      'check that the target is up and listening, and its connection limits (max connections, backlog, file descriptors)',
      'look for restarts of the target or a load balancer dropping connections under this load',
    ],
  },
];

export function errorClassCauses(ctx: DiagnosisContext): RootCauseCause[] {
  const span = ctx.timeline.span(Math.max(ctx.startMs, ctx.nowMs - CauseThresholds.errorWindowMs), ctx.nowMs);
  // Every rule selects failed calls only: the span's calls are counted, and only the failed ones
  // copied (this runs on each analysis tick, over every digest of the error window).
  let callCount = 0;
  const failedCalls: { call: TimedCall; digest: RecordDigest }[] = [];
  for (const d of span.digests)
    for (const c of d.calls) {
      callCount++;
      if (!c.ok) failedCalls.push({ call: { ...c, at: d.at, startedAt: d.startedAt }, digest: d });
    }
  const out: RootCauseCause[] = [];
  if (!failedCalls.length) return out;
  for (const rule of RULES) {
    if (!rule.answered && ctx.clientLimited !== null) continue;
    const failed = failedCalls.filter((x) => rule.select(x.call, x.digest)).map((x) => x.call);
    if (!failed.length || (!rule.answered && failed.length < CauseThresholds.errorMinCount)) continue;
    const share = failed.length / callCount;
    if (share < CauseThresholds.errorShare) continue;
    const since = minOf(failed.map((c) => c.startedAt));
    const layers = [...new Set(failed.map((c) => c.layer))];
    const seconds = ((span.toMs - span.fromMs) / 1000).toFixed(1);
    out.push({
      kind: rule.kind,
      title: rule.title,
      confidence: Math.min(1, 0.5 + share / 2),
      since,
      until: maxOf(failed.map((c) => c.at)),
      evidence: [
        `${failed.length}/${callCount} calls (${pct(share)}) in the last ${seconds} s ${rule.what} (on ${layers.join(', ')}); above ${pct(CauseThresholds.errorShare)}, tier SLO-1's error budget (spec: 99.5 % availability)`,
        `first at ${iso(since)}`,
        `example: ${failed[0].error ?? `HTTP ${failed[0].status}`}`,
        ...(rule.evidence?.(failed) ?? []),
      ],
      figures: { failed: failed.length, calls: callCount, share, ...(rule.figures?.(failed) ?? {}) },
      thresholds: [
        {
          name: 'share of calls',
          value: CauseThresholds.errorShare,
          source: 'spec',
          note: 'tier SLO-1 availability 99.5 %',
        },
      ],
      advice: rule.advice(failed),
    });
  }
  return out;
}
