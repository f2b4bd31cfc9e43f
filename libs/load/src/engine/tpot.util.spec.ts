import { tpotMs } from './tpot.util';

describe(tpotMs.name, () => {
  it('divides the time after the first token by the output tokens after the first', () => {
    expect(tpotMs(1000, 100, 10)).toBe(100);
    expect(tpotMs(250, 50, 5)).toBe(50);
  });

  it('is null with fewer than 2 output tokens or without a first token', () => {
    expect(tpotMs(500, 100, 1)).toBeNull();
    expect(tpotMs(500, 100, 0)).toBeNull();
    expect(tpotMs(500, null, 10)).toBeNull();
  });

  it('never goes negative when the last chunk carried the first token', () => {
    expect(tpotMs(100, 100.5, 3)).toBe(0);
  });
});
