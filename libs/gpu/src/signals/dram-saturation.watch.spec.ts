import type { NormalisedSample } from '../model/gpu-sample.model';
import { DramSaturationWatch } from './dram-saturation.watch';

const dram = (...values: number[]): NormalisedSample[] =>
  values.map((value, i) => ({
    source: 'dcgm',
    gpu: String(i),
    instance: null,
    metric: 'dram_active_ratio',
    value,
    unit: 'ratio',
  })) as NormalisedSample[];

describe(DramSaturationWatch.name, () => {
  it('opens after three saturated scrapes in a row and clears at the first one under the threshold', () => {
    const sut = new DramSaturationWatch();
    const seen = [
      dram(0.5, 0.9),
      dram(0.95),
      dram(0.7),
      dram(0.85),
      dram(0.9, 0.2),
      dram(0.92),
      dram(0.93),
      dram(0.6),
      dram(0.6),
    ].map((s) => sut.observe(s)?.kind ?? null);
    expect(seen).toEqual([null, null, null, null, null, 'opened', null, 'cleared', null]);
  });

  it('says the peak and the threshold, and ignores scrapes without a bandwidth reading', () => {
    const sut = new DramSaturationWatch(0.8, 2);
    expect(sut.observe(dram(0.81))).toBeNull();
    expect(sut.observe([])).toBeNull();
    expect(sut.observe(dram(0.3, 0.97))).toMatchObject({
      kind: 'opened',
      peak: 0.97,
      threshold: 0.8,
      scrapes: 2,
      basis: 'dram_active',
    });
  });
});
