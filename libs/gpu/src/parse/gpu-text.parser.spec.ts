import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { GpuParseError } from '../model/gpu-parse.error';
import { CANONICAL_METRICS, type NormalisedSample } from '../model/gpu-sample.model';
import { GPU_FIXTURES_DIR, readGpuFixture } from '../testing/fixture.util';
import { detectFormat } from './format.detector';
import { parseGpuText, parseGpuTextDetailed } from './gpu-text.parser';

function reading(
  samples: readonly NormalisedSample[],
  gpu: string,
  metric: string,
  instance: string | null = null,
): NormalisedSample | undefined {
  return samples.find((s) => s.gpu === gpu && s.metric === metric && s.instance === instance);
}

const H100_GPU0 = 'GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005';
const A100 = 'GPU-513536b6-7d19-9063-b049-1e69664bb298';
const A10G = 'GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94';
const MASKED_H100 = 'GPU-00000000-0000-0000-0000-000000000000';
const QWEN = 'vllm/Qwen/Qwen2.5-Coder-1.5B-Instruct';

describe(parseGpuText.name, () => {
  describe('dcgm-exporter, 8x H100 with Kubernetes pod labels', () => {
    const text = readGpuFixture('dcgm/dcgm-exporter-sample-h100-8gpu-k8s.prom');
    const sut = parseGpuTextDetailed(text);

    it('is detected as dcgm and keyed by UUID', () => {
      expect(sut.format).toBe('dcgm');
      expect(new Set(sut.samples.map((s) => s.gpu)).size).toBe(8);
      expect(
        sut.samples.every((s) => s.gpu.startsWith('GPU-') && s.instance === null && s.source === 'dcgm'),
      ).toBe(true);
    });

    it('reads power, temperature and utilisation with their units', () => {
      expect(reading(sut.samples, H100_GPU0, 'power_w')).toMatchObject({ value: 113.611, unit: 'W' });
      expect(reading(sut.samples, H100_GPU0, 'temperature_c')).toMatchObject({ value: 30, unit: 'C' });
      expect(reading(sut.samples, 'GPU-04d228d3-3b5a-3534-f5cf-969706647d56', 'power_w')?.value).toBe(66.997);
      expect(reading(sut.samples, H100_GPU0, 'gpu_util_pct')).toMatchObject({ value: 0, unit: '%' });
      expect(reading(sut.samples, H100_GPU0, 'mem_copy_util_pct')).toMatchObject({ value: 0, unit: '%' });
    });

    it('gives one sample per exposition line (the capture stops after GPU 5 MEM_COPY_UTIL)', () => {
      expect(sut.samples).toHaveLength(30);
      expect(
        reading(sut.samples, 'GPU-04d228d3-3b5a-3534-f5cf-969706647d56', 'mem_copy_util_pct'),
      ).toBeUndefined();
    });
  });

  describe('nvidia-smi -q -x', () => {
    it('DTD v12 A100 with MIG: gpu_power_readings, N/A utilisation missing, per-instance FB', () => {
      const sut = parseGpuTextDetailed(
        readGpuFixture('nvidia-smi/telegraf__nvidia_smi__testdata__a100-sxm4-v12.xml'),
      );
      expect(sut.format).toBe('nvidia-smi-xml');
      expect(reading(sut.samples, A100, 'power_w')).toMatchObject({ value: 67.03, unit: 'W' });
      expect(reading(sut.samples, A100, 'power_limit_w')?.value).toBe(500);
      expect(reading(sut.samples, A100, 'fb_used_mib')).toMatchObject({ value: 50, unit: 'MiB' });
      expect(reading(sut.samples, A100, 'fb_total_mib')?.value).toBe(81920);
      expect(reading(sut.samples, A100, 'temperature_c')?.value).toBe(27);
      expect(reading(sut.samples, A100, 'mem_temperature_c')?.value).toBe(44);
      expect(reading(sut.samples, A100, 'sm_clock_mhz')).toMatchObject({ value: 1275, unit: 'MHz' });
      expect(reading(sut.samples, A100, 'gpu_util_pct')).toBeUndefined();
      expect(reading(sut.samples, A100, 'fan_speed_pct')).toBeUndefined();
      const instances = sut.samples.filter((s) => s.metric === 'fb_used_mib' && s.instance !== null);
      expect(instances.map((s) => [s.instance, s.value])).toEqual([
        ['3', 12],
        ['4', 12],
        ['5', 12],
        ['6', 12],
      ]);
      expect(reading(sut.samples, A100, 'fb_total_mib', '6')?.value).toBe(19968);
    });

    it('DTD v11 A10G: power_readings', () => {
      const samples = parseGpuText(readGpuFixture('nvidia-smi/telegraf__nvidia_smi__testdata__a10g.xml'));
      expect(reading(samples, A10G, 'power_w')?.value).toBe(25.58);
      expect(reading(samples, A10G, 'power_limit_w')?.value).toBe(300);
      expect(reading(samples, A10G, 'fb_used_mib')?.value).toBe(22);
      expect(reading(samples, A10G, 'gpu_util_pct')?.value).toBe(0);
      expect(reading(samples, A10G, 'temperature_c')?.value).toBe(17);
      expect(reading(samples, A10G, 'sm_clock_mhz')?.value).toBe(210);
      expect(samples.some((s) => s.instance !== null)).toBe(false);
    });

    it('DTD v13 split power: average is power_w, instant is power_instant_w', () => {
      const v13 = readGpuFixture('nvidia-smi/telegraf__nvidia_smi__testdata__a10g.xml')
        .replace('nvsmi_device_v11.dtd', 'nvsmi_device_v13.dtd')
        .replace('<power_readings>', '<gpu_power_readings>')
        .replace('</power_readings>', '</gpu_power_readings>')
        .replace(
          '<power_draw>25.58 W</power_draw>',
          '<average_power_draw>25.58 W</average_power_draw><instant_power_draw>27.10 W</instant_power_draw>',
        );
      const samples = parseGpuText(v13, 'nvidia-smi-xml');
      expect(reading(samples, A10G, 'power_w')?.value).toBe(25.58);
      expect(reading(samples, A10G, 'power_instant_w')?.value).toBe(27.1);
    });
  });

  describe('nvidia-smi --query-gpu CSV', () => {
    it('H100 under load: units in headers and values, deprecated and [N/A] fields missing', () => {
      const sut = parseGpuTextDetailed(readGpuFixture('nvidia-smi/h100-query-gpu-full-load.csv'));
      expect(sut.format).toBe('nvidia-smi-csv');
      const get = (metric: string) => reading(sut.samples, MASKED_H100, metric);
      expect(get('fb_used_mib')).toMatchObject({ value: 19818, unit: 'MiB' });
      expect(get('fb_free_mib')?.value).toBe(61263);
      expect(get('fb_total_mib')?.value).toBe(81559);
      expect(get('fb_reserved_mib')?.value).toBe(479);
      expect(get('power_w')).toMatchObject({ value: 631.95, unit: 'W' });
      expect(get('power_instant_w')?.value).toBe(625.68);
      expect(get('power_limit_w')?.value).toBe(700);
      expect(get('gpu_util_pct')).toMatchObject({ value: 100, unit: '%' });
      expect(get('mem_copy_util_pct')?.value).toBe(11);
      expect(get('temperature_c')?.value).toBe(59);
      expect(get('mem_temperature_c')?.value).toBe(54);
      expect(get('sm_clock_mhz')?.value).toBe(1980);
      expect(get('mem_clock_mhz')?.value).toBe(2619);
      expect(get('fan_speed_pct')).toBeUndefined();
    });

    it('H100 idle', () => {
      const samples = parseGpuText(readGpuFixture('nvidia-smi/h100-query-gpu-full-idle.csv'));
      expect(reading(samples, MASKED_H100, 'power_w')?.value).toBe(69.85);
      expect(reading(samples, MASKED_H100, 'fb_used_mib')?.value).toBe(0);
      expect(reading(samples, MASKED_H100, 'sm_clock_mhz')?.value).toBe(345);
    });

    it('the capture bundle: both query-gpu sections, idle then load, other tables skipped', () => {
      const sut = parseGpuTextDetailed(
        readGpuFixture(
          'nvidia-smi/nvidia_gpu_exporter__captures__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt',
        ),
      );
      expect(sut.format).toBe('nvidia-smi-csv');
      expect(sut.samples.filter((s) => s.metric === 'power_w').map((s) => s.value)).toEqual([69.85, 631.95]);
      expect(sut.samples.filter((s) => s.metric === 'fb_used_mib').map((s) => s.value)).toEqual([0, 19818]);
    });

    it('nounits, noheader-less minimal query and MIB fallbacks', () => {
      const text =
        'index, uuid, utilization.gpu, memory.used, power.draw, clocks.sm\n0, GPU-aaa, 37, 1024, 88.5, 1410\n1, [N/A], [Not Supported], 2048, [N/A], 1410\n';
      const samples = parseGpuText(text);
      expect(reading(samples, 'GPU-aaa', 'gpu_util_pct')).toMatchObject({ value: 37, unit: '%' });
      expect(reading(samples, 'GPU-aaa', 'sm_clock_mhz')?.value).toBe(1410);
      expect(reading(samples, '1', 'fb_used_mib')?.value).toBe(2048);
      expect(reading(samples, '1', 'gpu_util_pct')).toBeUndefined();
      expect(reading(samples, '1', 'power_w')).toBeUndefined();
    });
  });

  describe('vLLM V0 /metrics (legacy names, truncated mid-histogram)', () => {
    const sut = parseGpuTextDetailed(
      readGpuFixture('vllm/vllm-v0-legacy-metrics-sample__aibrix-runtime-docs.prom'),
    );

    it('is detected as prometheus and keyed by server identity', () => {
      expect(sut.format).toBe('prometheus');
      expect(new Set(sut.samples.map((s) => `${s.source}|${s.gpu}|${s.instance}`))).toEqual(
        new Set([`vllm|${QWEN}|null`]),
      );
    });

    it('maps legacy gpu_cache_usage_perc and counters; -1 hit rate is missing', () => {
      const get = (metric: string) => reading(sut.samples, QWEN, metric);
      expect(get('kv_cache_usage_ratio')).toMatchObject({ value: 0, unit: 'ratio' });
      expect(get('requests_running')?.value).toBe(0);
      expect(get('requests_waiting')?.value).toBe(0);
      expect(get('requests_swapped')?.value).toBe(0);
      expect(get('preemptions_total')?.value).toBe(0);
      expect(get('prompt_tokens_total')).toMatchObject({ value: 148, unit: 'tokens' });
      expect(get('generation_tokens_total')?.value).toBe(955);
      expect(get('requests_succeeded_total')?.value).toBe(4);
      expect(get('prefix_cache_hit_ratio')).toBeUndefined();
    });
  });

  it('the vLLM metric catalogue (JSON, not an exposition) is refused with the reason', () => {
    const text = readGpuFixture('vllm/vllm-metrics-catalog.json');
    expect(detectFormat(text)).toBe('unknown');
    expect(() => parseGpuText(text)).toThrow(/JSON/);
  });

  it('every sample of every fixture uses a canonical metric with its catalogue unit', () => {
    const files = ['dcgm', 'nvidia-smi', 'vllm'].flatMap((dir) =>
      readdirSync(join(GPU_FIXTURES_DIR, dir))
        .filter((f) => /\.(prom|csv|xml|txt)$/.test(f) && !f.startsWith('dcgm-exporter__etc__'))
        .map((f) => `${dir}/${f}`),
    );
    expect(files).toHaveLength(11);
    for (const file of files) {
      const samples = parseGpuText(readGpuFixture(file));
      expect(samples.length).toBeGreaterThan(0);
      for (const s of samples) {
        expect(CANONICAL_METRICS[s.metric as keyof typeof CANONICAL_METRICS]?.unit).toBe(s.unit);
        expect(Number.isFinite(s.value)).toBe(true);
      }
    }
  });

  it.each([
    ['', /empty/],
    ['<html><body>502</body></html>', /markup/],
    ['hello world, this is not metrics', /not Prometheus/],
    ['# HELP only_help nothing here', /no samples/],
  ])('refuses %j', (text, reason) => {
    expect(() => parseGpuText(text)).toThrow(GpuParseError);
    expect(() => parseGpuText(text)).toThrow(reason);
  });

  it('refuses a forced format that does not fit', () => {
    expect(() => parseGpuText('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 30', 'nvidia-smi-xml')).toThrow(GpuParseError);
    expect(() => parseGpuText('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 30', 'nvidia-smi-csv')).toThrow(/CSV header/);
    expect(() =>
      parseGpuText(readGpuFixture('nvidia-smi/h100-query-gpu-full-load.csv'), 'prometheus'),
    ).toThrow(/not Prometheus text/);
  });
});
