import type { GpuTelemetry } from '@fathom/contracts';
import { readingsDuring } from './readings-during.util';

const scrape = (url: string, scrapedAt: number, value: number | null): GpuTelemetry => ({
  id: `${url}@${scrapedAt}`,
  schemaVersion: 1,
  campaignId: 'c',
  runId: 'r',
  emittedAt: scrapedAt,
  source: 'vllm',
  url,
  scrapedAt,
  health: value === null ? 'timeout' : 'ok',
  ...(value === null ? { error: 'slow' } : {}),
  samples:
    value === null
      ? []
      : [{ gpu: 'g', instance: null, metric: 'kv_cache_usage_ratio', value, unit: 'ratio' }],
});

describe(readingsDuring.name, () => {
  const telemetry = [
    scrape('a', 3000, 0.5),
    scrape('a', 1000, 0.1),
    scrape('a', 2000, null),
    scrape('b', 500, 0.9),
    scrape('a', 5000, 0.7),
  ];

  it('returns the readings inside the window, the last one before it per source, and the gaps', () => {
    const sut = readingsDuring(telemetry, 1500, 4000);
    expect(sut.readings.map((r) => [r.url, r.scrapedAt])).toEqual([
      ['b', 500],
      ['a', 1000],
      ['a', 3000],
    ]);
    expect(sut.gaps).toEqual([{ url: 'a', scrapedAt: 2000, health: 'timeout', error: 'slow' }]);
  });

  it('can leave out the reading before the window', () => {
    expect(
      readingsDuring(telemetry, 1500, 4000, { includePrevious: false }).readings.map((r) => r.scrapedAt),
    ).toEqual([3000]);
    expect(readingsDuring([], 0, 1)).toEqual({ readings: [], gaps: [] });
  });
});
