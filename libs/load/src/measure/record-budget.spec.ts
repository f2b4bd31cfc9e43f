import { RecordBudget } from './record-budget';

/** Records taken when one request finishes every `stepMs` for `seconds`. */
function taken(budget: RecordBudget, seconds: number, stepMs = 1): number {
  let n = 0;
  for (let t = stepMs; t <= seconds * 1000; t += stepMs) if (budget.take(t)) n++;
  return n;
}

describe('RecordBudget', () => {
  it('takes about its rate a second however fast requests finish', () => {
    const n = taken(RecordBudget.budget(100, 0), 10);
    expect(n).toBeGreaterThanOrEqual(1000);
    expect(n).toBeLessThanOrEqual(1101); // one second of burst at most
  });

  it('keeps the rate of a run that its maxRecords lasts', () => {
    const budget = RecordBudget.forShard(
      { recordsPerSecond: 100, maxRecords: 360_000, durationMs: 600_000 },
      1,
      0,
    );
    expect(budget.rate).toBe(100);
  });

  it('spreads maxRecords over a run too long for the rate, per shard', () => {
    const day = 24 * 3600 * 1000;
    const one = RecordBudget.forShard({ recordsPerSecond: 100, maxRecords: 360_000, durationMs: day }, 1, 0);
    expect(one.rate).toBeCloseTo(360_000 / 86_400, 6);
    const ofFour = RecordBudget.forShard(
      { recordsPerSecond: 100, maxRecords: 360_000, durationMs: day },
      4,
      0,
    );
    expect(ofFour.rate).toBeCloseTo(90_000 / 86_400, 6);
  });

  it("never takes more than the shard's share of maxRecords, whatever the run lasts", () => {
    const budget = RecordBudget.forShard({ recordsPerSecond: 100, maxRecords: 50, durationMs: 60_000 }, 2, 0);
    // Planned for 60 s at 25 / 60 a second; the shard runs 3 minutes (a drain, a slow end).
    expect(taken(budget, 180, 10)).toBe(25);
  });

  it('recovers no more than its capped rate after a client-bound window', () => {
    const budget = RecordBudget.forShard(
      { recordsPerSecond: 100, maxRecords: 3600, durationMs: 3_600_000 },
      1,
      0,
    );
    expect(budget.rate).toBe(1);
    budget.adjust(true);
    expect(budget.rate).toBe(0.5);
    for (let i = 0; i < 20; i++) budget.adjust(false);
    expect(budget.rate).toBe(1);
  });

  it('applies no ceiling to a fixed sample rate', () => {
    const budget = RecordBudget.fixed(1, () => 0);
    expect(taken(budget, 20)).toBe(20_000);
  });
});
