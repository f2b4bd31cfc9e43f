import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { GpuParseError } from '../model/gpu-parse.error';
import { makeSample, type CanonicalMetric, type NormalisedSample } from '../model/gpu-sample.model';
import { parseReading, toMiB } from '../model/reading.util';

type XmlNode = Record<string, unknown>;

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  trimValues: true,
  isArray: (name) => name === 'gpu' || name === 'mig_device',
  // nvidia-smi's document is 6 levels deep; this bounds the parser's recursion on hostile input.
  maxNestedTags: 64,
});

function child(node: unknown, name: string): XmlNode | undefined {
  if (!node || typeof node !== 'object') return undefined;
  const value = (node as XmlNode)[name];
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as XmlNode) : undefined;
}

function text(node: unknown, name: string): string | undefined {
  if (!node || typeof node !== 'object') return undefined;
  const value = (node as XmlNode)[name];
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

/**
 * `nvidia-smi -q -x`. Power moved between DTD versions: v11 `<power_readings><power_draw>`,
 * v12 `<gpu_power_readings><power_draw>` (plus `<module_power_readings>`), v13
 * `<gpu_power_readings>` with `<average_power_draw>` and `<instant_power_draw>`. Average is
 * what `power.draw` reports on such drivers, so it becomes `power_w`; the instant reading is
 * `power_instant_w`. MIG devices (`<mig_devices><mig_device>`) give per-instance framebuffer
 * readings with instance = `gpu_instance_id` (the same id DCGM calls `GPU_I_ID`).
 */
export function parseNvidiaSmiXml(textIn: string): NormalisedSample[] {
  let doc: XmlNode;
  try {
    const valid = XMLValidator.validate(textIn);
    if (valid !== true) {
      throw new GpuParseError(`nvidia-smi XML is not well-formed: ${valid.err.msg} (line ${valid.err.line})`);
    }
    doc = xml.parse(textIn) as XmlNode;
  } catch (error) {
    if (error instanceof GpuParseError) throw error;
    // fast-xml-parser throws a plain Error (or overflows its stack) on what its validator let
    // through: two DOCTYPEs, an unclosed processing instruction after the root, deep nesting.
    throw new GpuParseError(
      `nvidia-smi XML cannot be parsed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const log = child(doc, 'nvidia_smi_log');
  if (!log) throw new GpuParseError('XML has no <nvidia_smi_log> root: not `nvidia-smi -q -x` output');
  const gpus = Array.isArray(log['gpu']) ? (log['gpu'] as XmlNode[]) : [];
  const out: NormalisedSample[] = [];
  gpus.forEach((gpu, position) => {
    const id =
      text(gpu, 'uuid') ??
      text(gpu, 'minor_number') ??
      (gpu['@_id'] as string | undefined) ??
      String(position);
    const push = (metric: CanonicalMetric, value: number | undefined, instance: string | null = null) => {
      const sample = makeSample('nvidia-smi-xml', id, instance, metric, value);
      if (sample) out.push(sample);
    };
    const num = (node: unknown, name: string) => parseReading(text(node, name))?.value;
    const mib = (node: unknown, name: string) => toMiB(parseReading(text(node, name)));

    const utilization = child(gpu, 'utilization');
    push('gpu_util_pct', num(utilization, 'gpu_util'));
    push('mem_copy_util_pct', num(utilization, 'memory_util'));
    push('enc_util_pct', num(utilization, 'encoder_util'));
    push('dec_util_pct', num(utilization, 'decoder_util'));

    const fb = child(gpu, 'fb_memory_usage');
    push('fb_used_mib', mib(fb, 'used'));
    push('fb_free_mib', mib(fb, 'free'));
    push('fb_total_mib', mib(fb, 'total'));
    push('fb_reserved_mib', mib(fb, 'reserved'));

    const power = child(gpu, 'gpu_power_readings') ?? child(gpu, 'power_readings');
    push('power_w', num(power, 'average_power_draw') ?? num(power, 'power_draw'));
    push('power_instant_w', num(power, 'instant_power_draw'));
    push(
      'power_limit_w',
      num(power, 'enforced_power_limit') ?? num(power, 'current_power_limit') ?? num(power, 'power_limit'),
    );

    const temperature = child(gpu, 'temperature');
    push('temperature_c', num(temperature, 'gpu_temp'));
    push('mem_temperature_c', num(temperature, 'memory_temp'));

    const clocks = child(gpu, 'clocks');
    push('sm_clock_mhz', num(clocks, 'sm_clock'));
    push('mem_clock_mhz', num(clocks, 'mem_clock'));
    push('fan_speed_pct', num(gpu, 'fan_speed'));

    const migDevices = child(gpu, 'mig_devices')?.['mig_device'];
    if (Array.isArray(migDevices)) {
      for (const mig of migDevices as XmlNode[]) {
        const instance = text(mig, 'gpu_instance_id') ?? text(mig, 'index');
        if (instance === undefined) continue;
        const migFb = child(mig, 'fb_memory_usage');
        push('fb_used_mib', mib(migFb, 'used'), instance);
        push('fb_free_mib', mib(migFb, 'free'), instance);
        push('fb_total_mib', mib(migFb, 'total'), instance);
        push('fb_reserved_mib', mib(migFb, 'reserved'), instance);
      }
    }
  });
  if (gpus.length === 0) throw new GpuParseError('nvidia-smi XML lists no <gpu> elements');
  return out;
}
