import { FaultController } from '../faults/fault.controller';
import { injectedRefusal, injectedServerError } from './generation.handler';
import type { SimContext } from './sim.context';

describe(injectedRefusal.name, () => {
  const target = (seed: number, faults: Array<Record<string, unknown>>): SimContext => {
    const controller = new FaultController();
    for (const f of faults) controller.set(f as never);
    return { faults: controller, config: { seed } } as unknown as SimContext;
  };
  const refusedOf = (ctx: SimContext) =>
    Array.from({ length: 1000 }, (_, i) => i + 1).filter((n) => injectedRefusal(ctx, n));

  it('refuses about `rate` of the requests, the same ones under the same seed', () => {
    const refused = refusedOf(target(42, [{ kind: 'refusal_rate', rate: 0.3 }]));
    expect(refused.length).toBeGreaterThan(250);
    expect(refused.length).toBeLessThan(350);
    expect(refusedOf(target(42, [{ kind: 'refusal_rate', rate: 0.3 }]))).toEqual(refused);
    const otherSeed = refusedOf(target(43, [{ kind: 'refusal_rate', rate: 0.3 }]));
    expect(otherSeed).not.toEqual(refused);
  });

  it('refuses every request at rate 1, none at rate 0 or without the fault', () => {
    expect(refusedOf(target(42, [{ kind: 'refusal_rate' }]))).toHaveLength(1000);
    expect(refusedOf(target(42, [{ kind: 'refusal_rate', rate: 0 }]))).toEqual([]);
    expect(refusedOf(target(42, []))).toEqual([]);
  });

  it('draws apart from the 5xx fault: the same rate fails other requests than it refuses', () => {
    const ctx = target(42, [
      { kind: 'refusal_rate', rate: 0.5 },
      { kind: 'http_5xx', rate: 0.5 },
    ]);
    const refused = new Set(refusedOf(ctx));
    const failed = Array.from({ length: 1000 }, (_, i) => i + 1).filter((n) => injectedServerError(ctx, n));
    const both = failed.filter((n) => refused.has(n)).length;
    // Independent draws: about a quarter of all requests are both, not half.
    expect(both).toBeGreaterThan(180);
    expect(both).toBeLessThan(320);
  });

  it('refuses a bad rate when the fault is set', () => {
    expect(() => target(42, [{ kind: 'refusal_rate', rate: 1.5 }])).toThrow(/rate/);
  });
});
