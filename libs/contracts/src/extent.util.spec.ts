import fc from 'fast-check';
import { maxOf, minOf } from './extent.util';

describe('minOf / maxOf', () => {
  it('agree with Math.min and Math.max', () => {
    fc.assert(
      fc.property(fc.array(fc.double()), (values) => {
        expect(minOf(values)).toBe(Math.min(...values));
        expect(maxOf(values)).toBe(Math.max(...values));
      }),
    );
  });

  it('take as many values as a day of telemetry windows, where the spread throws', () => {
    const values = Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 300_000);
    expect(() => Math.min(...values)).toThrow(RangeError);
    expect(minOf(values)).toBe(0);
    expect(maxOf(values)).toBe(299_999);
  });

  it('give what the caller names for no value', () => {
    expect(minOf([], 0)).toBe(0);
    expect(maxOf([])).toBe(Number.NEGATIVE_INFINITY);
  });
});
