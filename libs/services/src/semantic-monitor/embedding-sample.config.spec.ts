import { AdaptiveSampleRate } from '@fathom/semantic';
import { DEFAULT_MIN_SAMPLE_RATE, minSampleRateFromEnv } from './embedding-sample.config';

describe(minSampleRateFromEnv.name, () => {
  it('defaults to 1 % and reads a share in (0, 1]', () => {
    expect(minSampleRateFromEnv({})).toBe(DEFAULT_MIN_SAMPLE_RATE);
    expect(minSampleRateFromEnv({ FATHOM_SEMANTIC_MIN_SAMPLE_RATE: '0.25' })).toBe(0.25);
  });

  it('refuses a value outside (0, 1] naming the variable', () => {
    for (const bad of ['0', '1.5', 'half', '-0.1'])
      expect(() => minSampleRateFromEnv({ FATHOM_SEMANTIC_MIN_SAMPLE_RATE: bad })).toThrow(
        /FATHOM_SEMANTIC_MIN_SAMPLE_RATE must be a number in \(0, 1\]/,
      );
  });

  it('is a floor the adaptive rate never backs off below, however busy the host', () => {
    const sut = new AdaptiveSampleRate({
      min: minSampleRateFromEnv({ FATHOM_SEMANTIC_MIN_SAMPLE_RATE: '0.3' }),
    });
    for (let i = 0; i < 20; i++) sut.adjust(100);
    expect(sut.rate).toBe(0.3);
  });
});
