import { decideRerun, mayRerunAfter } from './rerun.policy';

describe(decideRerun.name, () => {
  const config = { maxReruns: 2, cooldownMs: 5000 };
  const idle = { rerunsStarted: 0, rerunPending: false, lastRunEndedAt: 10_000 };

  it('waits out the cool-down after the last run ended', () => {
    expect(decideRerun(config, idle, 12_000)).toEqual({ start: true, delayMs: 3000 });
    expect(decideRerun(config, idle, 20_000)).toEqual({ start: true, delayMs: 0 });
  });

  it('refuses past the cap', () => {
    expect(decideRerun(config, { ...idle, rerunsStarted: 2 }, 20_000)).toEqual({
      start: false,
      reason: 'rerun cap reached (2/2)',
    });
  });

  it('folds requests into a pending rerun', () => {
    expect(decideRerun(config, { ...idle, rerunPending: true }, 20_000).start).toBe(false);
  });

  it('does not rerun while the run still goes', () => {
    expect(decideRerun(config, { ...idle, lastRunEndedAt: null }, 20_000).start).toBe(false);
  });
});

describe(mayRerunAfter.name, () => {
  it('refuses a rerun after an aborted run and allows one after a finished run', () => {
    expect(mayRerunAfter('aborted')).toBe(false);
    expect(mayRerunAfter('completed')).toBe(true);
    expect(mayRerunAfter('failed')).toBe(true);
  });
});
