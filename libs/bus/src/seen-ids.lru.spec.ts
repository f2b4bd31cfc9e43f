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

  it('forgets ids older than its age bound, however few arrived since', () => {
    let now = 0;
    const sut = new SeenIds(100, 60_000, () => now);
    sut.add('a');
    now = 30_000;
    sut.add('b');
    now = 61_000; // 'a' is 61 s old, 'b' 31 s
    expect(sut.has('b')).toBe(true);
    expect(sut.has('a')).toBe(false);
    sut.add('c');
    now = 95_000; // 'b' was refreshed at 61 s: 34 s old
    sut.add('d');
    expect(sut.size).toBe(3);
    now = 200_000;
    sut.add('e');
    expect(sut.size).toBe(1);
    expect(['b', 'c', 'd', 'e'].map((id) => sut.has(id))).toEqual([false, false, false, true]);
  });

  it('refuses a capacity below one', () => {
    expect(() => new SeenIds(0)).toThrow(RangeError);
    expect(() => new SeenIds(1, 0)).toThrow(RangeError);
  });
});
