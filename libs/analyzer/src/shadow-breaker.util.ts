import type { DetectorSignal } from '@fathom/contracts';
import { CircuitBreaker, type BreakerKey, type BreakerTransition } from '@fathom/analysis';
import type { StoredShadowBreaker } from '@fathom/storage';

/** The candidate's breaker a shadow signal is judged on (layer `llm` of its host); null: it names none. */
export function shadowBreakerKey(signal: DetectorSignal): BreakerKey | null {
  const target = signal.labels?.['target'];
  if (!target || !URL.canParse(target)) return null;
  return { target, layer: 'llm', node: new URL(target).host };
}

/**
 * One window's verdict (`signal`) on the candidate's breaker, judged on the breaker as stored
 * after the previous window (`stored`; null: none judged yet): a sustained regression
 * (`critical`) opens it; a clean window (`info`) passes and a regressed one (`warning`) fails a
 * half-open probe. Returns the transitions to announce and the breaker to store; null when the
 * window is no later than the last one judged (a redelivery after a restart).
 */
export function judgeShadowWindow(
  stored: StoredShadowBreaker | null,
  key: BreakerKey,
  signal: DetectorSignal,
): { transitions: BreakerTransition[]; breaker: StoredShadowBreaker } | null {
  const at = signal.emittedAt;
  if (stored && at <= stored.judgedUntil) return null;
  const breaker = stored ? CircuitBreaker.restore(stored) : new CircuitBreaker(key);
  const transitions =
    signal.severity === 'critical'
      ? [breaker.trip(at, `${signal.detector}: ${signal.message}`, signal.figures)].filter((t) => t !== null)
      : breaker.observe(at, signal.severity === 'info', 0);
  return {
    transitions,
    breaker: { runId: signal.runId, ...breaker.snapshot(), judgedUntil: at, lastSignalId: signal.id },
  };
}
