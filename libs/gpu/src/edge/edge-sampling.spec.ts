import { EdgeSamplingGovernor } from './edge-sampling.governor';
import { HostResourceReader, type HostOs } from './host-resource.reader';

const MiB = 1024 * 1024;
const reading = (cpuPct: number, freeMiB: number) => ({ cpuPct, freeMemBytes: freeMiB * MiB, atMs: 0 });

describe(EdgeSamplingGovernor.name, () => {
  it('reduces only when CPU > 75 % and free memory < 128 MiB together', () => {
    const sut = new EdgeSamplingGovernor();
    expect(sut.evaluate(reading(95, 512)).mode).toBe('full');
    expect(sut.evaluate(reading(40, 64)).mode).toBe('full');
    expect(sut.evaluate(reading(75, 64)).mode).toBe('full');
    const decision = sut.evaluate(reading(76, 127));
    expect(decision).toMatchObject({ mode: 'reduced', changed: true });
    expect(sut.evaluate(reading(90, 100))).toMatchObject({ mode: 'reduced', changed: false });
  });

  it('recovers after 3 healthy readings in a row, not on the first', () => {
    const sut = new EdgeSamplingGovernor();
    sut.evaluate(reading(90, 100));
    expect(sut.evaluate(reading(10, 4096)).mode).toBe('reduced');
    expect(sut.evaluate(reading(10, 4096)).mode).toBe('reduced');
    sut.evaluate(reading(90, 100)); // relapse resets the streak
    expect(sut.evaluate(reading(10, 4096)).mode).toBe('reduced');
    expect(sut.evaluate(reading(10, 4096)).mode).toBe('reduced');
    expect(sut.evaluate(reading(10, 4096))).toMatchObject({ mode: 'full', changed: true });
  });
});

describe(HostResourceReader.name, () => {
  it('computes CPU from tick deltas, falling back to load average on the first read', () => {
    let ticks = { user: 100, nice: 0, sys: 0, idle: 900, irq: 0 };
    const fakeOs: HostOs = {
      cpus: () => [{ times: { ...ticks } }, { times: { ...ticks } }],
      freemem: () => 100 * MiB,
      loadavg: () => [1.5, 1, 1],
    };
    const sut = new HostResourceReader(fakeOs, () => 42);
    expect(sut.read()).toEqual({ cpuPct: 75, freeMemBytes: 100 * MiB, atMs: 42 });
    ticks = { user: 180, nice: 0, sys: 0, idle: 920, irq: 0 }; // +80 busy, +20 idle per core
    expect(sut.read().cpuPct).toBeCloseTo(80);
  });

  it('reads the real host', () => {
    const first = new HostResourceReader().read();
    expect(first.cpuPct).toBeGreaterThanOrEqual(0);
    expect(first.cpuPct).toBeLessThanOrEqual(100);
    expect(first.freeMemBytes).toBeGreaterThan(0);
  });
});
