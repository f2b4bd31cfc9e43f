import type { NormalisedSample } from '../model/gpu-sample.model';
import { nvidiaSmiArgs } from '../scrape/nvidia-smi.runner';
import { readGpuFixture } from '../testing/fixture.util';
import { parseGpuTextDetailed } from './gpu-text.parser';

// Captured on a real H200 (driver 580.159.04, CUDA 13.0) by bench/device/check.sh: the
// collector's own query (nvidiaSmiArgs) and `nvidia-smi -q -x`, idle and while 40 GiB were held
// and bf16 matmuls ran. The values asserted are read off the captured files.
const H200 = 'GPU-67e6a1fd-a60b-985c-12e3-e9316c8ff001';

function values(samples: readonly NormalisedSample[]): Record<string, number> {
  expect(samples.every((s) => s.gpu === H200 && s.instance === null)).toBe(true);
  return Object.fromEntries(samples.map((s) => [s.metric, s.value]));
}

describe('a real H200 captured with the collector query and with -q -x', () => {
  it('the CSV header is the collector query, with the names nvidia-smi canonicalises (clocks.sm -> clocks.current.sm)', () => {
    const header = readGpuFixture('nvidia-smi/h200-query-gpu-load.csv').split('\n')[0];
    const asked = nvidiaSmiArgs()[0].slice('--query-gpu='.length).split(',');
    const got = header.split(',').map((c) => c.replace(/\[.*\]/, '').trim());
    expect(got).toHaveLength(asked.length);
    expect(got.filter((name, i) => name !== asked[i])).toEqual([
      'clocks.current.sm',
      'clocks.current.memory',
    ]);
  });

  it('reads the idle CSV: nothing used, 141 GiB of framebuffer, idle clocks', () => {
    const parsed = parseGpuTextDetailed(readGpuFixture('nvidia-smi/h200-query-gpu-idle.csv'));
    expect(parsed.format).toBe('nvidia-smi-csv');
    expect(values(parsed.samples)).toEqual({
      gpu_util_pct: 0,
      mem_copy_util_pct: 0,
      fb_used_mib: 0,
      fb_free_mib: 143156,
      fb_total_mib: 143771,
      power_w: 78.39,
      power_limit_w: 700,
      temperature_c: 35,
      sm_clock_mhz: 345,
      mem_clock_mhz: 3201,
    });
  });

  it('reads the loaded CSV: full utilisation, the 40 GiB held, power at the limit', () => {
    const parsed = parseGpuTextDetailed(readGpuFixture('nvidia-smi/h200-query-gpu-load.csv'));
    expect(values(parsed.samples)).toEqual({
      gpu_util_pct: 100,
      mem_copy_util_pct: 24,
      fb_used_mib: 42099,
      fb_free_mib: 101058,
      fb_total_mib: 143771,
      power_w: 691.77,
      power_limit_w: 700,
      temperature_c: 57,
      sm_clock_mhz: 1500,
      mem_clock_mhz: 3201,
    });
  });

  it('reads the DTD v13 XML the same way, with what only -q -x carries (reserved framebuffer, instant power, memory temperature)', () => {
    const idle = parseGpuTextDetailed(readGpuFixture('nvidia-smi/h200-q-x-idle.xml'));
    const load = parseGpuTextDetailed(readGpuFixture('nvidia-smi/h200-q-x-load.xml'));
    expect(idle.format).toBe('nvidia-smi-xml');
    expect(load.format).toBe('nvidia-smi-xml');
    const loaded = values(load.samples);
    expect(loaded).toMatchObject({
      gpu_util_pct: 100,
      mem_copy_util_pct: 25,
      fb_used_mib: 42099,
      fb_total_mib: 143771,
      fb_reserved_mib: 616,
      power_w: 691.34,
      power_instant_w: 736.27,
      power_limit_w: 700,
      mem_temperature_c: 46,
      sm_clock_mhz: 1470,
    });
    // used + free + reserved = total on both captures, within the 2 MiB that rounding three values to the MiB allows
    for (const v of [values(idle.samples), loaded]) {
      expect(
        Math.abs(v.fb_used_mib + v.fb_free_mib + v.fb_reserved_mib - v.fb_total_mib),
      ).toBeLessThanOrEqual(2);
    }
    expect(values(idle.samples)).toMatchObject({ gpu_util_pct: 0, fb_used_mib: 0, sm_clock_mhz: 345 });
  });
});
