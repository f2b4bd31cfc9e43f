import { AdaptiveSampleRate } from '@fathom/semantic';
import { DEFAULT_MIN_SAMPLE_RATE } from './embedding-sample.config';
import { parseSemanticMonitorSettings } from './semantic-monitor.settings';

describe(parseSemanticMonitorSettings.name, () => {
  it('defaults the embedding floor to 1 % and reads a share in (0, 1]', () => {
    expect(parseSemanticMonitorSettings({}).FATHOM_SEMANTIC_MIN_SAMPLE_RATE).toBe(DEFAULT_MIN_SAMPLE_RATE);
    expect(
      parseSemanticMonitorSettings({ FATHOM_SEMANTIC_MIN_SAMPLE_RATE: '' }).FATHOM_SEMANTIC_MIN_SAMPLE_RATE,
    ).toBe(DEFAULT_MIN_SAMPLE_RATE);
    expect(
      parseSemanticMonitorSettings({ FATHOM_SEMANTIC_MIN_SAMPLE_RATE: '0.25' })
        .FATHOM_SEMANTIC_MIN_SAMPLE_RATE,
    ).toBe(0.25);
  });

  it('refuses a floor outside (0, 1] and an unknown embedder, naming the variable', () => {
    for (const bad of ['0', '1.5', 'half', '-0.1'])
      expect(() => parseSemanticMonitorSettings({ FATHOM_SEMANTIC_MIN_SAMPLE_RATE: bad })).toThrow(
        /invalid semantic-monitor settings: FATHOM_SEMANTIC_MIN_SAMPLE_RATE/,
      );
    expect(() => parseSemanticMonitorSettings({ FATHOM_SEMANTIC_EMBEDDER: 'bert' })).toThrow(
      /FATHOM_SEMANTIC_EMBEDDER/,
    );
  });

  it('gives a floor the adaptive rate never backs off below, however busy the host', () => {
    const sut = new AdaptiveSampleRate({
      min: parseSemanticMonitorSettings({ FATHOM_SEMANTIC_MIN_SAMPLE_RATE: '0.3' })
        .FATHOM_SEMANTIC_MIN_SAMPLE_RATE,
    });
    for (let i = 0; i < 20; i++) sut.adjust(100);
    expect(sut.rate).toBe(0.3);
  });
});
