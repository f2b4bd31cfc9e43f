import { Detectors, type RootCauseCause, minOf, maxOf } from '@fathom/contracts';
import type { DiagnosisContext } from '../diagnosis.context';

/**
 * Prompt explosion (spec, anomaly class 1) from the semantic-monitor's `prompt-explosion`
 * signals: nesting depth > 5 or token count > 3.0 x the sliding P95 baseline (spec).
 */
export function promptExplosionCause(ctx: DiagnosisContext): RootCauseCause | null {
  const explosions = ctx.recent.detectors.filter((s) => s.detector === Detectors.promptExplosion);
  if (!explosions.length) return null;
  return {
    kind: 'prompt-explosion',
    title: 'prompts exceed the nesting depth or token surge bounds',
    confidence: Math.min(1, 0.5 + 0.05 * explosions.length),
    since: minOf(explosions.map((s) => s.emittedAt)),
    until: maxOf(explosions.map((s) => s.emittedAt)),
    evidence: explosions.slice(0, 3).map((s) => s.message),
    figures: { signals: explosions.length },
    thresholds: [
      { name: 'nested prompt depth', value: 5, source: 'spec', note: 'depth > 5 breaks the circuit' },
      {
        name: 'token surge over the P95 baseline',
        value: 3,
        source: 'spec',
        note: 'token count > 3.0 x the sliding P95',
      },
    ],
    advice: [
      'cap nesting depth (<= 5) and prompt tokens (<= 3x the P95 baseline) before the model sees them',
    ],
  };
}
