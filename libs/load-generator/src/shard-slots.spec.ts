import { ShardSlots } from './shard-slots';

describe(ShardSlots.name, () => {
  it('runs at most size shards at once and starts the queued ones in arrival order', async () => {
    const sut = new ShardSlots(2);
    const started: number[] = [];
    const releases: Array<() => void> = [];
    const all = [0, 1, 2, 3, 4].map(async (i) => {
      const release = await sut.acquire();
      started.push(i);
      releases[i] = release;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1]);
    expect(sut.queued).toBe(3);
    releases[1]();
    releases[1](); // a second release changes nothing
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    releases[0]();
    releases[2]();
    await new Promise((resolve) => setImmediate(resolve));
    releases[3]();
    releases[4]();
    await Promise.all(all);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(sut.active).toBe(0);
  });
});
