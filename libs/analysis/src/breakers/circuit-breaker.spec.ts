import { BreakerBoard, CircuitBreaker, DEFAULT_BREAKER_CONFIG } from './circuit-breaker';

const key = { target: 't', layer: 'rerank', node: 'n1' };

describe(CircuitBreaker.name, () => {
  it('opens at a 50 % failure rate over 10 calls, goes half-open after openMs and closes after 3 good probes', () => {
    const sut = new CircuitBreaker(key);
    const transitions = [];
    for (let i = 0; i < 10; i++) transitions.push(...sut.observe(1000 + i, i % 2 === 0, 5, '/rag/rerank'));
    expect(transitions.map((t) => t.to)).toEqual(['open']);
    expect(transitions[0].paths).toEqual(['/rag/rerank']);
    expect(sut.tick(1009 + DEFAULT_BREAKER_CONFIG.openMs - 1)).toBeNull();
    expect(sut.tick(1009 + DEFAULT_BREAKER_CONFIG.openMs)?.to).toBe('half-open');
    const probes = [0, 1, 2].flatMap((i) => sut.observe(7000 + i, true, 5));
    expect(probes.map((t) => t.to)).toEqual(['closed']);
  });

  it('reopens on a failed half-open probe and stays closed below the failure rate', () => {
    const sut = new CircuitBreaker(key);
    for (let i = 0; i < 9; i++) expect(sut.observe(i, i < 4, 5)).toEqual([]);
    expect(sut.state).toBe('closed');
    sut.trip(100, 'reranker busy');
    sut.tick(100 + DEFAULT_BREAKER_CONFIG.openMs);
    expect(sut.observe(6000, false, 5).map((t) => t.to)).toEqual(['open']);
  });

  it('opens on the slow-call rate', () => {
    const sut = new CircuitBreaker(key, { ...DEFAULT_BREAKER_CONFIG, slowCallMs: 100 });
    const out = Array.from({ length: 10 }, (_, i) => sut.observe(i, true, 150)).flat();
    expect(out[0].reason).toContain('slow-call rate 100.0 %');
  });
});

describe(`${CircuitBreaker.name} rebuilt from its snapshot`, () => {
  /** A shadow candidate's windows as the analyzer judges them: a trip, clean and regressed windows. */
  type Step = { at: number } & ({ trip: string } | { ok: boolean });
  const steps: Step[] = [
    { at: 60_000, ok: true },
    { at: 120_000, ok: false },
    { at: 180_000, trip: 'sustained regression' },
    { at: 240_000, trip: 'still regressed' },
    { at: 300_000, ok: true },
    { at: 360_000, ok: false },
    { at: 420_000, ok: true },
    { at: 480_000, ok: true },
    { at: 540_000, ok: true },
    { at: 600_000, ok: true },
  ];
  const apply = (sut: CircuitBreaker, step: Step) =>
    'trip' in step
      ? [sut.trip(step.at, step.trip)].filter((t) => t !== null)
      : sut.observe(step.at, step.ok, 0);

  it.each(steps.map((_, cut) => cut))(
    'judges every window after a restart at window %i as the breaker that ran on',
    (cut) => {
      const ranOn = new CircuitBreaker(key);
      const expected = steps.map((step) => apply(ranOn, step));
      const before = new CircuitBreaker(key);
      for (const step of steps.slice(0, cut)) apply(before, step);
      // Through JSON, as the store keeps it.
      const sut = CircuitBreaker.restore(JSON.parse(JSON.stringify(before.snapshot())));

      expect(sut.snapshot()).toEqual(before.snapshot());
      expect(steps.slice(cut).map((step) => apply(sut, step))).toEqual(expected.slice(cut));
      expect(sut.snapshot()).toEqual(ranOn.snapshot());
    },
  );

  it('keeps an open breaker open, since the window that opened it, and closes it after its probes', () => {
    const before = new CircuitBreaker(key);
    before.trip(180_000, 'sustained regression');
    const sut = CircuitBreaker.restore(before.snapshot());

    expect(sut.snapshot()).toMatchObject({ state: 'open', since: 180_000, openedAt: 180_000 });
    expect(sut.trip(240_000, 'still regressed')).toBeNull();
    expect([0, 1, 2].flatMap((i) => sut.observe(300_000 + 60_000 * i, true, 0)).map((t) => t.to)).toEqual([
      'half-open',
      'closed',
    ]);
  });
});

describe(BreakerBoard.name, () => {
  it('counts trips per minute per node', () => {
    const sut = new BreakerBoard();
    sut.trip(key, 1000, 'a');
    sut.trip({ ...key, layer: 'llm' }, 2000, 'b');
    sut.trip({ ...key, node: 'n2' }, 3000, 'c');
    expect(sut.tripsPerMinute(3000)).toBe(2);
    expect(sut.tripsPerMinute(61_500)).toBe(1);
  });
});
