import { EPISODE_WATCHES, ShareEpisodeWatch, rerankerBusyOf } from './share-episode.watch';

describe(ShareEpisodeWatch.name, () => {
  it('opens once when a fifth of the last 2 s is refused and clears once under half that', () => {
    const sut = new ShareEpisodeWatch(EPISODE_WATCHES.rerankerBusy);
    const changes = [];
    // 100 ms apart: clean for 3 s, a third refused for 3 s, clean again for 6 s.
    for (let i = 0; i < 120; i++) {
      const refused = i >= 30 && i < 60 && i % 3 === 0;
      const c = sut.observe(i * 100, refused);
      if (c) changes.push({ kind: c.kind, at: c.at });
    }
    expect(changes.map((c) => c.kind)).toEqual(['opened', 'cleared']);
    expect(changes[0].at).toBeGreaterThanOrEqual(3_000);
    expect(changes[0].at).toBeLessThan(4_500);
    expect(sut.isOpen).toBe(false);
  });

  it('needs its minimum of samples', () => {
    const sut = new ShareEpisodeWatch(EPISODE_WATCHES.rerankerBusy);
    expect([0, 1, 2, 3].map((i) => sut.observe(i, true))).toEqual([null, null, null, null]);
    expect(sut.observe(4, true)?.kind).toBe('opened');
  });

  it('judges against the run’s own baseline share plus the rise', () => {
    const sut = new ShareEpisodeWatch(EPISODE_WATCHES.semanticFailureRate);
    const opened: number[] = [];
    // A quarter fail from the start (the target's normal), then every one fails from i = 100.
    for (let i = 0; i < 200; i++) {
      const c = sut.observe(i * 100, i >= 100 || i % 4 === 0);
      if (c?.kind === 'opened') opened.push(i);
      if (c) expect(c).toMatchObject({ baselineShare: 0.25, bound: 0.55 });
    }
    expect(opened).toHaveLength(1);
    expect(opened[0]).toBeGreaterThan(100);
    expect(opened[0]).toBeLessThan(150);
  });
});

describe(rerankerBusyOf.name, () => {
  it('reads the spec’s refusal text', () => {
    expect(rerankerBusyOf('HTTP 503: {"error":"reranker busy: 32/32 in use"}')).toEqual({
      inUse: 32,
      cap: 32,
    });
    expect(rerankerBusyOf('HTTP 503: overloaded')).toBeNull();
    expect(rerankerBusyOf(undefined)).toBeNull();
  });
});
