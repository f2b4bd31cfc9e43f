import { PromptExplosionDetector } from './prompt-explosion.detector';

describe(PromptExplosionDetector.name, () => {
  it('raises no alarm on a clean run and trips on a planted surge over 3 x P95', () => {
    const sut = new PromptExplosionDetector({ window: 50, minBaseline: 20 });
    const verdicts = [];
    for (let i = 0; i < 100; i++) verdicts.push(sut.observe('Summarise the text.', 100 + (i % 20)));
    expect(verdicts.some((v) => v.exploded)).toBe(false);
    expect(sut.p95()).toBe(119);
    const surge = sut.observe('Summarise the text.', 400);
    expect(surge).toMatchObject({ exploded: true, reasons: ['surge'], baselineP95: 119 });
    expect(surge.surgeRatio).toBeCloseTo(400 / 119, 6);
    expect(sut.observe('Summarise the text.', 350).reasons).toEqual([]);
  });

  it('keeps exploded prompts out of the baseline so a sustained surge keeps tripping', () => {
    const sut = new PromptExplosionDetector({ window: 20, minBaseline: 10 });
    for (let i = 0; i < 20; i++) sut.observe('q', 100);
    for (let i = 0; i < 50; i++) expect(sut.observe('q', 500).exploded).toBe(true);
  });

  it('does not judge a surge while the baseline warms up, but judges depth at once', () => {
    const sut = new PromptExplosionDetector();
    expect(sut.observe('q', 10_000)).toMatchObject({ baselineP95: null, surgeRatio: null, exploded: false });
    expect(sut.observe('((((((deep))))))', 10).reasons).toEqual(['depth']);
    expect(sut.observe('(((((ok)))))', 10).exploded).toBe(false);
  });
});
