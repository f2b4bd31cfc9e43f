import type { ShadowSample, TargetObservation } from '@fathom/contracts';
import { compareShadowSamples } from './shadow-diff.util';

const base: TargetObservation = {
  ok: true,
  e2eMs: 100,
  ttftMs: 20,
  hallucinationRisk: 0,
  toolCalls: [{ name: 'lookup', arguments: '{"id":"a1"}' }],
  refused: false,
  schemaValid: true,
};

function samples(candidate: (i: number) => Partial<TargetObservation>, n = 10): ShadowSample[] {
  return Array.from({ length: n }, (_, i) => ({
    endpoint: '/v1/chat/completions',
    intent: 'orders',
    primary: base,
    secondary: base,
    candidate: { ...base, ...candidate(i) },
    similarityPrimarySecondary: null,
    similarityPrimaryCandidate: null,
  }));
}

const differences = (s: ShadowSample[]) => compareShadowSamples(s)[0].differences.map((d) => d.metric);

describe('compareShadowSamples: tool calls, schema and refusals', () => {
  it('raises nothing for a candidate that answers as the primary does', () => {
    expect(differences(samples(() => ({})))).toEqual([]);
  });

  it('names tool calls whose names or count differ', () => {
    const other = samples((i) => (i < 6 ? { toolCalls: [] } : {}));
    expect(differences(other)).toEqual(['toolCalls']);
    const metric = compareShadowSamples(other)[0].metrics.find((m) => m.metric === 'toolCalls')!;
    expect(metric).toMatchObject({ noiseFloor: 0, candidateDifference: 0.6, samples: 10, beyondNoise: true });
  });

  it('names arguments that differ, but not the same arguments in another key order', () => {
    expect(differences(samples(() => ({ toolCalls: [{ name: 'lookup', arguments: '{"id":42}' }] })))).toEqual(
      ['toolArguments'],
    );
  });

  it('names schema violations and refusals beyond the primary/secondary noise', () => {
    expect(differences(samples((i) => (i % 2 ? { schemaValid: false } : {})))).toEqual(['schemaViolations']);
    expect(differences(samples(() => ({ refused: true })))).toEqual(['refusals']);
  });

  it('does not count what the secondary disagrees on as much', () => {
    const noisy = (secondaryRefuses: number) =>
      samples(() => ({ refused: true })).map((s, i) => ({
        ...s,
        secondary: { ...s.secondary, refused: i < secondaryRefuses },
      }));
    expect(differences(noisy(10))).toEqual([]);
    // One point more than the noise is beyond it.
    expect(differences(noisy(8))).toEqual(['refusals']);
  });

  it('leaves samples stored before these fields existed out of the rates', () => {
    const old = samples(() => ({})).map((s) => {
      const strip = ({ ok, e2eMs, ttftMs, hallucinationRisk }: TargetObservation) => ({
        ok,
        e2eMs,
        ttftMs,
        hallucinationRisk,
      });
      return {
        ...s,
        primary: strip(s.primary),
        secondary: strip(s.secondary),
        candidate: strip(s.candidate),
      };
    });
    const metrics = compareShadowSamples(old)[0].metrics;
    expect(metrics.find((m) => m.metric === 'refusals')).toMatchObject({ samples: 0, beyondNoise: false });
  });
});
