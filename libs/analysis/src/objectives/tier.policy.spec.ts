import { TierHysteresis, type TierEvaluation } from './tier.policy';

const at = (candidate: string): TierEvaluation => ({
  candidate,
  miss:
    candidate === 'SLO-0'
      ? null
      : {
          objective: 'correctedE2e p99',
          value: 950,
          threshold: 800,
          ok: false,
          text: 'SLO-0 missed: p99 950 ms > 800 ms',
        },
  results: {},
});

describe(TierHysteresis.name, () => {
  it('assigns the first tier at once, enters a worse one after 2 bad evaluations and leaves after 3 good ones', () => {
    const sut = new TierHysteresis();
    expect(sut.observe(at('SLO-0'))).toMatchObject({ from: null, to: 'SLO-0' });
    expect(sut.observe(at('SLO-1'))).toBeNull();
    const entered = sut.observe(at('SLO-1'));
    expect(entered).toMatchObject({
      from: 'SLO-0',
      to: 'SLO-1',
      objective: 'correctedE2e p99',
      figures: { value: 950, threshold: 800 },
    });
    expect(sut.observe(at('SLO-0'))).toBeNull();
    expect(sut.observe(at('SLO-0'))).toBeNull();
    expect(sut.observe(at('SLO-0'))).toMatchObject({
      from: 'SLO-1',
      to: 'SLO-0',
      objective: 'correctedE2e p99',
    });
  });

  it('does not flap on alternating verdicts', () => {
    const sut = new TierHysteresis();
    sut.observe(at('SLO-0'));
    for (let i = 0; i < 10; i++) expect(sut.observe(at(i % 2 ? 'SLO-0' : 'SLO-1'))).toBeNull();
    expect(sut.tier).toBe('SLO-0');
  });

  it('restored to the tier a run was in, announces no assignment and changes only after the hysteresis', () => {
    const sut = new TierHysteresis();
    sut.restore('SLO-1', at('SLO-1').miss);

    expect(sut.tier).toBe('SLO-1');
    expect(sut.observe(at('SLO-1'))).toBeNull();
    expect(sut.observe(at('SLO-0'))).toBeNull();
    expect(sut.observe(at('SLO-0'))).toBeNull();
    expect(sut.observe(at('SLO-0'))).toMatchObject({
      from: 'SLO-1',
      to: 'SLO-0',
      objective: 'correctedE2e p99',
      figures: { value: 950, threshold: 800 },
    });
  });
});
