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

describe('compareShadowSamples: latency', () => {
  const timed = (primary: number[], secondary: number[], candidate: number[]): ShadowSample[] =>
    primary.map((p, i) => ({
      endpoint: '/v1/chat/completions',
      intent: 'chat',
      primary: { ...base, e2eMs: p },
      secondary: { ...base, e2eMs: secondary[i] },
      candidate: { ...base, e2eMs: candidate[i] },
      similarityPrimarySecondary: null,
      similarityPrimaryCandidate: null,
    }));
  const e2e = (s: ShadowSample[]) => compareShadowSamples(s)[0].metrics.find((m) => m.metric === 'e2eMs')!;

  it('names a candidate slower beyond the noise floor and a fifth of the primary', () => {
    const p = [100, 100, 100, 100, 100];
    expect(e2e(timed(p, [102, 98, 101, 99, 103], [190, 185, 200, 195, 188]))).toMatchObject({
      noiseFloor: expect.closeTo(2.8, 5),
      candidateDifference: 90,
      beyondNoise: true,
    });
  });

  it('does not name a difference beyond the noise floor but under a fifth of the primary', () => {
    const p = [100, 100, 100, 100, 100];
    expect(e2e(timed(p, [102, 98, 101, 99, 103], [115, 112, 118, 114, 116])).beyondNoise).toBe(false);
  });
});
