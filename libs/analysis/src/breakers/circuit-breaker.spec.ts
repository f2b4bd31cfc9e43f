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
