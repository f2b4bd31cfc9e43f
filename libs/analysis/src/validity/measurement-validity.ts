import type { MeasurementValidity, TelemetryWindow } from '@fathom/contracts';
import type { RecordDigest } from '../evidence/record-digest';
import { requestRatesPerBucket } from '../report/run-series';
import { CLIENT_BOUND_ADVICE, assessGenerator } from './client-bound';

export interface ValidityOptions {
  /** Share of iterations that may start late or be dropped before the generator is the bottleneck. */
  readonly maxLateShare: number;
  /** A response's token counts disagree when |server - client| exceeds max(absolute, relative x tokens). */
  readonly tokenMismatchAbsolute: number;
  readonly tokenMismatchRelative: number;
  /** Share of responses that may disagree before the counts are not trusted. */
  readonly maxMismatchShare: number;
  /** Throughput per window (middle windows) may vary by this coefficient of variation. */
  readonly maxThroughputCv: number;
  /** Fewest middle windows (first and last excluded) to call anything steady. */
  readonly minSteadyWindows: number;
}

export const DEFAULT_VALIDITY_OPTIONS: ValidityOptions = {
  maxLateShare: 0.05,
  tokenMismatchAbsolute: 2,
  tokenMismatchRelative: 0.1,
  maxMismatchShare: 0.05,
  maxThroughputCv: 0.5,
  minSteadyWindows: 3,
};

/** Successful responses with a server token count, and those whose count disagrees with the client's. */
export interface TokenAgreement {
  counted: number;
  disagree: number;
}

/** Counts one digest into `agreement` (a response counts when it succeeded with a server count). */
export function addTokenAgreement(
  agreement: TokenAgreement,
  d: RecordDigest,
  options: ValidityOptions = DEFAULT_VALIDITY_OPTIONS,
): void {
  if (!d.ok || d.tokenMismatch === null) return;
  agreement.counted++;
  if (
    Math.abs(d.tokenMismatch) >
    Math.max(options.tokenMismatchAbsolute, options.tokenMismatchRelative * d.outputTokens)
  )
    agreement.disagree++;
}

export function tokenAgreementOf(
  digests: readonly RecordDigest[],
  options: ValidityOptions = DEFAULT_VALIDITY_OPTIONS,
): TokenAgreement {
  const agreement = { counted: 0, disagree: 0 };
  for (const d of digests) addTokenAgreement(agreement, d, options);
  return agreement;
}

/**
 * Whether a run measured the target: the generator was not the bottleneck (its own health per
 * window: `client-bound`, listed first), kept its schedule (k6: dropped iterations;
 * late starts in open-model profiles), client and server agree on token counts, and throughput
 * reached a steady state. A run whose unsteadiness a named root cause explains (the target
 * degraded under a fault) is valid: it measured that degradation.
 */
export function assessValidity(
  windows: readonly TelemetryWindow[],
  records: readonly RecordDigest[] | TokenAgreement,
  explainedByCause: boolean,
  options: ValidityOptions = DEFAULT_VALIDITY_OPTIONS,
): MeasurementValidity {
  const reasons: MeasurementValidity['reasons'] = [];
  const { health: generator, bound } = assessGenerator(windows);
  if (bound) {
    reasons.push({
      kind: 'client-bound',
      detail: `${bound.detail}; advice: ${CLIENT_BOUND_ADVICE.join(', ')}`,
      figures: bound.figures,
    });
  }
  const requests = windows.reduce((n, w) => n + w.requests, 0);
  const late = windows.reduce((n, w) => n + w.late, 0);
  const dropped = windows.reduce((n, w) => n + w.dropped, 0);
  const iterations = requests + dropped;
  if (iterations > 0 && (late + dropped) / iterations > options.maxLateShare) {
    reasons.push({
      kind: 'generator-bottleneck',
      detail: `the generator fell behind its schedule: ${late} late and ${dropped} dropped of ${iterations} iterations (> ${options.maxLateShare * 100} %)`,
      figures: { late, dropped, iterations, share: (late + dropped) / iterations },
    });
  }

  const { counted, disagree } = 'counted' in records ? records : tokenAgreementOf(records, options);
  if (counted && disagree / counted > options.maxMismatchShare) {
    reasons.push({
      kind: 'token-count-mismatch',
      detail: `server and client token counts disagree on ${disagree}/${counted} responses (> ${options.maxMismatchShare * 100} %): tokenizer or usage accounting differs, token rates are not trustworthy`,
      figures: { disagree, counted, share: disagree / counted },
    });
  }

  // The run's throughput per second (requests a second, every generator and shard summed), first
  // and last (ramp) left out. Keyed by window start, as it was, each shard's windows stood apart
  // (shards start at their own moments): a run of uneven shards, 80 and 10 req/s and as steady as
  // can be, read as CV 0.78 and was called unsteady, and only the run's first and last window,
  // not each shard's, were taken for its ramp.
  const middle = requestRatesPerBucket(windows).slice(1, -1);
  if (!explainedByCause) {
    if (middle.length < options.minSteadyWindows) {
      reasons.push({
        kind: 'no-steady-state',
        detail:
          windows.length === 0
            ? 'no telemetry window at all: no load was measured'
            : `only ${middle.length} full windows after ramp-up (< ${options.minSteadyWindows}): the run is too short to reach a steady state`,
        figures: { windows: middle.length },
      });
    } else {
      const mean = middle.reduce((a, b) => a + b, 0) / middle.length;
      const sd = Math.sqrt(middle.reduce((a, b) => a + (b - mean) ** 2, 0) / middle.length);
      const cv = mean > 0 ? sd / mean : Number.POSITIVE_INFINITY;
      if (cv > options.maxThroughputCv) {
        reasons.push({
          kind: 'no-steady-state',
          detail: `throughput per window varies by CV ${Number.isFinite(cv) ? cv.toFixed(2) : 'inf'} (> ${options.maxThroughputCv}) with no target-side cause named`,
          figures: { cv: Number.isFinite(cv) ? cv : -1, meanRequestsPerSec: mean, windows: middle.length },
        });
      }
    }
  }
  return { valid: reasons.length === 0, reasons, ...(generator ? { generator } : {}) };
}
