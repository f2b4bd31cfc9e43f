import fc from 'fast-check';
import { SeenIds } from './seen-ids.lru';

describe(SeenIds.name, () => {
  it('remembers ids until more than capacity newer ones arrive', () => {
    const sut = new SeenIds(3);
    ['a', 'b', 'c', 'd'].forEach((id) => sut.add(id));
    expect(sut.has('a')).toBe(false);
    expect(['b', 'c', 'd'].map((id) => sut.has(id))).toEqual([true, true, true]);
  });

  it('evicts the least recently seen id, not the oldest added', () => {
    const sut = new SeenIds(2);
    sut.add('a');
    sut.add('b');
    expect(sut.has('a')).toBe(true); // touching 'a' makes 'b' the eviction candidate
    sut.add('c');
    expect(sut.has('b')).toBe(false);
    expect(sut.has('a')).toBe(true);
  });

  it('never holds more than its capacity', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.string({ maxLength: 3 }), { maxLength: 200 }),
        (capacity, ids) => {
          const sut = new SeenIds(capacity);
          ids.forEach((id) => sut.add(id));
          expect(sut.size).toBeLessThanOrEqual(capacity);
          if (ids.length > 0) expect(sut.has(ids[ids.length - 1])).toBe(true);
        },
      ),
    );
  });

  it('refuses a capacity below one', () => {
    expect(() => new SeenIds(0)).toThrow(RangeError);
  });
});
