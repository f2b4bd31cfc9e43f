import { parsePrometheusText } from '../exposition/prometheus-text.parser';
import type { NormalisedSample } from '../model/gpu-sample.model';
import { readGpuFixture } from '../testing/fixture.util';
import { DCGM_FIELD_MAP, DCGM_FIELDS_NOT_NORMALISED } from './dcgm.adapter';
import { adaptExposition } from './exposition.adapter';

const adapt = (text: string, serverId?: string) => adaptExposition(parsePrometheusText(text), { serverId });
const find = (samples: readonly NormalisedSample[], metric: string, gpu?: string, instance?: string | null) =>
  samples.filter(
    (s) =>
      s.metric === metric &&
      (gpu === undefined || s.gpu === gpu) &&
      (instance === undefined || s.instance === instance),
  );

/** Field names from a dcgm-exporter counters CSV, commented-out ones included. */
function csvFields(file: string): string[] {
  return readGpuFixture(file)
    .split('\n')
    .map((l) => /^#?\s*((?:DCGM_FI_|dcgm_)\w+)\s*,/.exec(l.trim())?.[1])
    .filter((f): f is string => f !== undefined);
}

describe('dcgm adapter', () => {
  it.each([
    'dcgm/dcgm-exporter__etc__default-counters.csv',
    'dcgm/dcgm-exporter__etc__dcp-metrics-included.csv',
    'dcgm/dcgm-exporter__etc__1.x-compatibility-metrics.csv',
  ])('decides every enabled field of %s, and reads each as its unit', (file) => {
    const enabled = readGpuFixture(file)
      .split('\n')
      .filter((l) => !l.trim().startsWith('#'))
      .map((l) => /^\s*((?:DCGM_FI_|dcgm_)\w+)\s*,\s*(\w+)/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null && m[2] !== 'label');
    expect(enabled.length).toBeGreaterThan(10);
    for (const [, field] of enabled) {
      expect(field in DCGM_FIELD_MAP || DCGM_FIELDS_NOT_NORMALISED.has(field)).toBe(true);
    }
    // One exposition with every mapped field of the file at 0.5 (a valid ratio and a valid reading).
    const mapped = enabled.map((m) => m[1]).filter((f) => f in DCGM_FIELD_MAP);
    const text = mapped.map((f) => `${f}{gpu="0",uuid="GPU-x"} 0.5`).join('\n');
    const samples = adapt(text);
    expect(samples.map((s) => s.metric).sort()).toEqual(
      [...new Set(mapped.map((f) => DCGM_FIELD_MAP[f].metric))].sort(),
    );
    expect(samples.every((s) => s.value === 0.5 && s.gpu === 'GPU-x')).toBe(true);
  });

  it('knows the commented-out profiling fields too (SM_ACTIVE is off by default but matters)', () => {
    const all = csvFields('dcgm/dcgm-exporter__etc__dcp-metrics-included.csv');
    for (const f of ['DCGM_FI_PROF_SM_ACTIVE', 'DCGM_FI_PROF_SM_OCCUPANCY']) {
      expect(all).toContain(f);
      expect(DCGM_FIELD_MAP[f]).toBeDefined();
    }
  });

  it('turns "not supported" sentinels into missing, never numbers', () => {
    const samples = adapt(
      [
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a"} 9223372036854775794',
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a"} 140737488355330',
        'DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a"} 2147483634',
        'DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-a"} NaN',
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a"} 41',
      ].join('\n'),
    );
    expect(samples.map((s) => [s.metric, s.value])).toEqual([['temperature_c', 41]]);
  });

  it('keys by UUID, then host/index; hostname (2026 rename) and Hostname both work', () => {
    const samples = adapt(
      [
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="node-a"} 30',
        'DCGM_FI_DEV_GPU_TEMP{hostname="node-b",gpu="0"} 31',
        'DCGM_FI_DEV_GPU_TEMP{gpu="1"} 32',
      ].join('\n'),
    );
    expect(samples.map((s) => [s.gpu, s.value])).toEqual([
      ['node-a/0', 30],
      ['node-b/0', 31],
      ['1', 32],
    ]);
  });

  it('reads legacy -o names with the lowercase uuid label', () => {
    const samples = adapt(
      'dcgm_power_usage{gpu="2",uuid="GPU-old"} 250.5\ndcgm_fi_prof_dram_active{gpu="2",uuid="GPU-old"} 0.83',
    );
    expect(find(samples, 'power_w', 'GPU-old')[0]?.value).toBe(250.5);
    expect(find(samples, 'dram_active_ratio', 'GPU-old')[0]?.value).toBe(0.83);
  });

  it('splits MIG instances by GPU_I_ID and drops their meaningless GPU_UTIL', () => {
    const samples = adapt(
      [
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-m",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7"} 0',
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-m",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7"} 1200',
        'DCGM_FI_PROF_SM_ACTIVE{GPU_I_ID="7",GPU_I_PROFILE="1g.10gb",UUID="GPU-m",gpu="0"} 0.4',
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-m"} 5000',
      ].join('\n'),
    );
    expect(find(samples, 'gpu_util_pct')).toEqual([]);
    expect(find(samples, 'fb_used_mib', 'GPU-m', '7')[0]?.value).toBe(1200);
    expect(find(samples, 'fb_used_mib', 'GPU-m', null)[0]?.value).toBe(5000);
    expect(find(samples, 'sm_active_ratio', 'GPU-m', '7')[0]?.value).toBe(0.4);
  });

  it('keeps one reading when pod mapping repeats a GPU line', () => {
    const samples = adapt(
      [
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-p",namespace="a",pod="p1",container="c"} 100',
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-p",namespace="b",pod="p2",container="c"} 100',
      ].join('\n'),
    );
    expect(find(samples, 'power_w')).toHaveLength(1);
  });
});

interface CatalogMetric {
  name: string;
  type: string;
  exposed?: string[];
}

describe('vllm adapter', () => {
  /** A V1-style exposition with every catalogued counter/gauge, two engines, labels in odd order. */
  function v1Exposition(): string {
    const catalog = JSON.parse(readGpuFixture('vllm/vllm-metrics-catalog.json')) as {
      metrics: CatalogMetric[];
    };
    const lines: string[] = [];
    for (const metric of catalog.metrics) {
      if (metric.type !== 'gauge' && metric.type !== 'counter') continue;
      for (const name of metric.exposed ?? [metric.name]) {
        lines.push(`${name}{engine="0",model_name="m"} 10`);
        lines.push(`${name}{model_name="m",engine="1"} 30`);
      }
    }
    return lines.join('\n');
  }

  it('maps the current V1 names per engine, preferring kv_cache_usage_perc over the legacy name', () => {
    const text = `${v1Exposition()}\nvllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25\nvllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.99`;
    const samples = adapt(text.replace(/vllm:kv_cache_usage_perc\{engine="0",model_name="m"\} 10\n/, ''));
    expect(find(samples, 'kv_cache_usage_ratio', 'vllm/m', '0')[0]?.value).toBe(0.25);
    expect(find(samples, 'prefix_cache_queries_total', 'vllm/m').map((s) => [s.instance, s.value])).toEqual([
      ['0', 10],
      ['1', 30],
    ]);
    expect(find(samples, 'prefix_cache_hits_total', 'vllm/m', '1')[0]?.unit).toBe('tokens');
    expect(find(samples, 'requests_waiting', 'vllm/m', '0')[0]?.value).toBe(10);
    expect(find(samples, 'preemptions_total', 'vllm/m', '1')[0]?.value).toBe(30);
  });

  it('takes inter_token_latency over time_per_output_token and estimates quantiles', () => {
    const histogram = (name: string, scale: number) =>
      [
        `${name}_bucket{le="0.01",model_name="m"} ${0 * scale}`,
        `${name}_bucket{le="0.1",model_name="m"} ${50 * scale}`,
        `${name}_bucket{le="1.0",model_name="m"} ${100 * scale}`,
        `${name}_bucket{le="+Inf",model_name="m"} ${100 * scale}`,
        `${name}_sum{model_name="m"} ${7 * scale}`,
        `${name}_count{model_name="m"} ${100 * scale}`,
      ].join('\n');
    const samples = adapt(
      `${histogram('vllm:time_per_output_token_seconds', 2)}\n${histogram('vllm:inter_token_latency_seconds', 1)}\n${histogram('vllm:time_to_first_token_seconds', 1)}`,
    );
    expect(find(samples, 'itl_count_total')[0]?.value).toBe(100);
    expect(find(samples, 'itl_sum_s')[0]).toMatchObject({ value: 7, unit: 's' });
    expect(find(samples, 'itl_p50_s')[0]?.value).toBeCloseTo(0.1);
    expect(find(samples, 'ttft_p99_s')[0]?.value).toBeCloseTo(0.982);
    // Only the old name present: it still gives itl.
    expect(find(adapt(histogram('vllm:time_per_output_token_seconds', 2)), 'itl_count_total')[0]?.value).toBe(
      200,
    );
  });

  it('uses the scraper-given server id when there is one', () => {
    const samples = adapt('vllm:num_requests_running{model_name="m"} 3', 'vllm-a:8000');
    expect(samples[0]).toMatchObject({ gpu: 'vllm-a:8000', metric: 'requests_running', value: 3 });
  });
});

describe('tgi and triton adapters', () => {
  it('maps TGI queue, batch, outcomes and latency histograms', () => {
    const samples = adapt(
      [
        '# TYPE tgi_queue_size gauge',
        'tgi_queue_size 4',
        'tgi_batch_current_size 12',
        'tgi_request_success 90',
        'tgi_request_failure{err="validation"} 3',
        'tgi_request_failure{err="overloaded"} 2',
        'tgi_request_duration_bucket{le="0.5"} 10',
        'tgi_request_duration_bucket{le="+Inf"} 20',
        'tgi_request_duration_sum 15',
        'tgi_request_duration_count 20',
      ].join('\n'),
    );
    expect(find(samples, 'requests_waiting', 'tgi')[0]?.value).toBe(4);
    expect(find(samples, 'requests_running', 'tgi')[0]?.value).toBe(12);
    expect(find(samples, 'requests_failed_total', 'tgi')[0]?.value).toBe(5);
    expect(find(samples, 'e2e_count_total', 'tgi')[0]?.value).toBe(20);
    expect(find(samples, 'e2e_p50_s', 'tgi')[0]?.value).toBeCloseTo(0.5);
  });

  it('maps Triton GPU metrics by gpu_uuid with unit conversions, and model metrics by model/version', () => {
    const samples = adapt(
      [
        'nv_gpu_utilization{gpu_uuid="GPU-t"} 0.42',
        'nv_gpu_memory_used_bytes{gpu_uuid="GPU-t"} 2147483648',
        'nv_gpu_power_usage{gpu_uuid="GPU-t"} 210.5',
        'nv_energy_consumption{gpu_uuid="GPU-t"} 1234.5',
        'nv_inference_pending_request_count{model="resnet",version="1"} 6',
        'nv_inference_request_success{model="resnet",version="1"} 1000',
        'nv_inference_request_duration_us{model="resnet",version="1"} 2500000',
      ].join('\n'),
    );
    expect(find(samples, 'gpu_util_pct', 'GPU-t')[0]?.value).toBeCloseTo(42);
    expect(find(samples, 'fb_used_mib', 'GPU-t')[0]?.value).toBe(2048);
    expect(find(samples, 'energy_mj', 'GPU-t')[0]?.value).toBe(1234500);
    expect(find(samples, 'requests_waiting', 'triton/resnet', '1')[0]?.value).toBe(6);
    expect(find(samples, 'e2e_sum_s', 'triton/resnet', '1')[0]?.value).toBe(2.5);
    expect(samples.every((s) => s.source === 'triton')).toBe(true);
  });

  it('ignores metrics it does not know', () => {
    expect(adapt('process_cpu_seconds_total 12\ngo_goroutines 40')).toEqual([]);
  });
});
