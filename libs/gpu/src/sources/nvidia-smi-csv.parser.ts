import { GpuParseError } from '../model/gpu-parse.error';
import { makeSample, type CanonicalMetric, type NormalisedSample } from '../model/gpu-sample.model';
import { parseReading, toMiB, type Reading } from '../model/reading.util';

type Conversion = 'plain' | 'mib';

/**
 * `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` field -> canonical metric, with
 * fallbacks in preference order (field names per `nvidia-smi --help-query-gpu`; older drivers
 * spell the clocks `clocks.sm`/`clocks.mem`, newer also `clocks.current.*`).
 * `utilization.memory` is the memory-controller busy time, the same reading as DCGM MEM_COPY_UTIL.
 */
const FIELD_MAP: ReadonlyArray<readonly [CanonicalMetric, readonly string[], Conversion]> = [
  ['gpu_util_pct', ['utilization.gpu'], 'plain'],
  ['mem_copy_util_pct', ['utilization.memory'], 'plain'],
  ['enc_util_pct', ['utilization.encoder'], 'plain'],
  ['dec_util_pct', ['utilization.decoder'], 'plain'],
  ['fb_used_mib', ['memory.used'], 'mib'],
  ['fb_free_mib', ['memory.free'], 'mib'],
  ['fb_total_mib', ['memory.total'], 'mib'],
  ['fb_reserved_mib', ['memory.reserved'], 'mib'],
  ['power_w', ['power.draw', 'power.draw.average'], 'plain'],
  ['power_instant_w', ['power.draw.instant'], 'plain'],
  ['power_limit_w', ['enforced.power.limit', 'power.limit'], 'plain'],
  ['temperature_c', ['temperature.gpu'], 'plain'],
  ['mem_temperature_c', ['temperature.memory'], 'plain'],
  ['sm_clock_mhz', ['clocks.current.sm', 'clocks.sm'], 'plain'],
  ['mem_clock_mhz', ['clocks.current.memory', 'clocks.mem'], 'plain'],
  ['fan_speed_pct', ['fan.speed'], 'plain'],
];

const IDENTITY_FIELDS = ['uuid', 'gpu_uuid', 'index', 'pci.bus_id', 'gpu_bus_id'];
const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  ...FIELD_MAP.flatMap(([, names]) => names),
  'uuid',
  'index',
  'pci.bus_id',
  'name',
  'timestamp',
  'driver_version',
  'count',
  'serial',
  'pstate',
]);

/** The query-gpu fields the local runner asks for: supported by every driver since R450. */
export const NVIDIA_SMI_QUERY_FIELDS = [
  'timestamp',
  'index',
  'uuid',
  'name',
  'utilization.gpu',
  'utilization.memory',
  'memory.total',
  'memory.used',
  'memory.free',
  'power.draw',
  'power.limit',
  'temperature.gpu',
  'clocks.sm',
  'clocks.mem',
] as const;

interface Column {
  readonly field: string;
  /** Unit from the header (`memory.used [MiB]`), if any. */
  readonly unit?: string;
}

function parseHeader(line: string): Column[] {
  return line.split(',').map((cell) => {
    const match = /^\s*(.*?)\s*(?:\[([^\]]*)\])?\s*$/.exec(cell);
    const field = (match?.[1] ?? cell).trim();
    return match?.[2] ? { field, unit: match[2].trim() } : { field };
  });
}

function knownCount(columns: readonly Column[]): number {
  return columns.filter((c) => KNOWN_FIELDS.has(c.field)).length;
}

/** True when a line looks like a query-gpu CSV header (used by format detection too). */
export function isNvidiaSmiCsvHeader(line: string, minKnown = 2): boolean {
  if (!line.includes(',') && minKnown > 1) return false;
  const columns = parseHeader(line);
  return knownCount(columns) >= minKnown && columns.every((c) => /^[A-Za-z_][A-Za-z0-9_.]*$/.test(c.field));
}

/**
 * Reads every query-gpu CSV block in the text: a header line then its rows, up to a blank or
 * `#` line. So a plain `--format=csv` capture, an `-l` loop (rows repeat) and a capture bundle
 * with several sections all work; other tables (query-compute-apps, ...) are skipped because
 * their headers name no GPU field. Each row is one reading of one GPU; several readings of the
 * same GPU give several samples, in file order.
 */
export function parseNvidiaSmiCsv(text: string): NormalisedSample[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const firstContent = lines.findIndex((l) => l.trim() !== '');
  const samples: NormalisedSample[] = [];
  let blocks = 0;
  let badRows = 0;
  let goodRows = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!isNvidiaSmiCsvHeader(line, i === firstContent ? 1 : 2)) continue;
    blocks++;
    const columns = parseHeader(line);
    let rowNo = 0;
    for (i = i + 1; i < lines.length; i++) {
      const row = lines[i].trim();
      if (row === '' || row.startsWith('#')) break;
      const cells = row.split(',').map((c) => c.trim());
      if (cells.length !== columns.length) {
        badRows++;
        continue;
      }
      goodRows++;
      samples.push(...rowSamples(columns, cells, rowNo++));
    }
  }
  if (blocks === 0) {
    throw new GpuParseError(
      'no nvidia-smi --query-gpu CSV header found (expected e.g. "index, uuid, utilization.gpu [%], ...")',
    );
  }
  if (goodRows === 0 && badRows > 0) {
    throw new GpuParseError(
      `nvidia-smi CSV: no row has as many fields as its header (${badRows} rows rejected)`,
    );
  }
  return samples;
}

function rowSamples(columns: readonly Column[], cells: readonly string[], rowNo: number): NormalisedSample[] {
  const byField = new Map<string, { raw: string; unit?: string }>();
  columns.forEach((column, index) => byField.set(column.field, { raw: cells[index], unit: column.unit }));

  let gpu: string | undefined;
  for (const field of IDENTITY_FIELDS) {
    const raw = byField.get(field)?.raw;
    if (raw && !raw.startsWith('[') && !/^n\/?a$/i.test(raw)) {
      gpu = raw;
      break;
    }
  }
  gpu ??= String(rowNo);

  const out: NormalisedSample[] = [];
  for (const [metric, fields, conversion] of FIELD_MAP) {
    for (const field of fields) {
      const cell = byField.get(field);
      if (!cell) continue;
      const reading: Reading | undefined = parseReading(cell.raw);
      const value = conversion === 'mib' ? toMiB(reading, cell.unit ?? 'MiB') : reading?.value;
      const sample = makeSample('nvidia-smi-csv', gpu, null, metric, value);
      if (sample) {
        out.push(sample);
        break;
      }
    }
  }
  return out;
}
