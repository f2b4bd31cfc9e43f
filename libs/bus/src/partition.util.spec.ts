import fc from 'fast-check';
import { partitionForKey } from './partition.util';

describe(partitionForKey.name, () => {
  it('puts every key on one partition in range, the same one every time', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 64 }), (key, partitions) => {
        const partition = partitionForKey(key, partitions);
        expect(Number.isInteger(partition) && partition >= 0 && partition < partitions).toBe(true);
        expect(partitionForKey(key, partitions)).toBe(partition);
      }),
    );
  });

  it('spreads many keys over every partition', () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[partitionForKey(`run-1/${i}`, 4)]++;
    for (const count of counts) expect(count).toBeGreaterThan(800); // 1000 expected per partition
  });
});
