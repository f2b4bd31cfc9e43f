/**
 * A parser for the Prometheus text exposition format (0.0.4) that also accepts the parts of
 * OpenMetrics 1.0 a scrape target commonly mixes in (`# EOF`, `# UNIT`, `_created`, exemplars,
 * float-second timestamps) and Prometheus 3 quoted UTF-8 metric names (`{"my.metric",a="b"}`).
 *
 * Why not an npm package: the one text-format parser on npm (`parse-prometheus-text-format`
 * 1.1.1, a 2018 port of client_python's parser, no releases with changes since) returns values
 * and timestamps as strings, has no types, and knows nothing of OpenMetrics suffixes. The format
 * is small enough to own, with property tests (see prometheus-text.parser.spec.ts).
 *
 * Contract: strict about the shape of each sample line (a line that is not a sample, a comment or
 * blank throws `PrometheusParseError` with its line number, so a scraper can tell garbage from a
 * real exposition), lenient about grouping (samples without `# TYPE` become `untyped` families;
 * a family split over non-adjacent lines is merged).
 */

export type PromMetricType =
  | 'counter'
  | 'gauge'
  | 'histogram'
  | 'summary'
  | 'untyped'
  | 'unknown'
  | 'info'
  | 'stateset'
  | 'gaugehistogram';

export interface PromSample {
  /** Full sample name, suffix included (`x_bucket`, `x_total`). */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** NaN, +Infinity and -Infinity are kept as such. */
  readonly value: number;
  /** Epoch milliseconds, when the line carried a timestamp. */
  readonly timestampMs?: number;
}

export interface PromFamily {
  readonly name: string;
  type: PromMetricType;
  help?: string;
  readonly samples: PromSample[];
}

export class PrometheusParseError extends Error {
  constructor(
    message: string,
    /** 1-based line number in the input. */
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'PrometheusParseError';
  }
}

const METRIC_TYPES: ReadonlySet<string> = new Set([
  'counter',
  'gauge',
  'histogram',
  'summary',
  'untyped',
  'unknown',
  'info',
  'stateset',
  'gaugehistogram',
]);

/** Suffixes a sample may add to its family's name, per family type (text format + OpenMetrics). */
const FAMILY_SUFFIXES: Readonly<Record<string, readonly string[]>> = {
  histogram: ['_bucket', '_sum', '_count', '_created'],
  gaugehistogram: ['_bucket', '_gsum', '_gcount'],
  summary: ['_sum', '_count', '_created'],
  counter: ['_total', '_created'],
  info: ['_info'],
};
const ALL_SUFFIXES = ['_bucket', '_sum', '_count', '_created', '_total', '_gsum', '_gcount', '_info'];

const METRIC_NAME_START = /[a-zA-Z_:]/;
const METRIC_NAME_CHAR = /[a-zA-Z0-9_:]/;
const LABEL_NAME_START = /[a-zA-Z_]/;
const LABEL_NAME_CHAR = /[a-zA-Z0-9_]/;
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Parses a Prometheus/OpenMetrics float: decimal, `NaN`, `+Inf`, `-Inf`, `Inf` (any case). */
export function parsePromFloat(token: string): number | undefined {
  if (FLOAT.test(token)) return Number(token);
  const lower = token.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (lower === '+inf' || lower === 'inf' || lower === '+infinity' || lower === 'infinity') return Infinity;
  if (lower === '-inf' || lower === '-infinity') return -Infinity;
  return undefined;
}

export function parsePrometheusText(text: string): PromFamily[] {
  const families: PromFamily[] = [];
  const byName = new Map<string, PromFamily>();
  const declared = new Set<string>();

  const familyNamed = (name: string): PromFamily => {
    let family = byName.get(name);
    if (!family) {
      family = { name, type: 'untyped', samples: [] };
      byName.set(name, family);
      families.push(family);
    }
    return family;
  };

  const familyForSample = (sampleName: string): PromFamily => {
    if (declared.has(sampleName)) return familyNamed(sampleName);
    for (const suffix of ALL_SUFFIXES) {
      if (!sampleName.endsWith(suffix)) continue;
      const base = byName.get(sampleName.slice(0, -suffix.length));
      if (base && declared.has(base.name) && (FAMILY_SUFFIXES[base.type] ?? []).includes(suffix)) return base;
    }
    return familyNamed(sampleName);
  };

  const lines = text.split(/\r?\n/);
  for (let index = 0; index < lines.length; index++) {
    const lineNo = index + 1;
    const line = lines[index].replace(/^\uFEFF/, '').trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const comment = parseComment(line);
      if (!comment) continue;
      if (comment.kind === 'TYPE') {
        if (!METRIC_TYPES.has(comment.rest)) {
          throw new PrometheusParseError(`unknown metric type "${comment.rest}" for ${comment.name}`, lineNo);
        }
        const family = familyNamed(comment.name);
        family.type = comment.rest as PromMetricType;
        declared.add(comment.name);
      } else if (comment.kind === 'HELP') {
        const family = familyNamed(comment.name);
        family.help = unescapeHelp(comment.rest);
        declared.add(comment.name);
      }
      continue;
    }
    const sample = parseSampleLine(line, lineNo);
    familyForSample(sample.name).samples.push(sample);
  }
  // A family declared by HELP/TYPE but without samples is still reported (empty), as Prometheus does.
  return families;
}

function parseComment(line: string): { kind: 'HELP' | 'TYPE'; name: string; rest: string } | undefined {
  const match = /^#\s*(HELP|TYPE)\s+("(?:[^"\\]|\\.)*"|\S+)(?:\s+(.*))?$/.exec(line);
  if (!match) return undefined;
  const rawName = match[2];
  const name = rawName.startsWith('"') ? unescapeLabelValue(rawName.slice(1, -1)) : rawName;
  const rest = match[1] === 'TYPE' ? (match[3] ?? '').trim().toLowerCase() : (match[3] ?? '');
  return { kind: match[1] as 'HELP' | 'TYPE', name, rest };
}

function unescapeHelp(text: string): string {
  return text.replace(/\\(\\|n)/g, (_m, ch: string) => (ch === 'n' ? '\n' : '\\'));
}

function unescapeLabelValue(text: string): string {
  return text.replace(/\\(["\\n])/g, (_m, ch: string) => (ch === 'n' ? '\n' : ch));
}

/** Scans one sample line: `name{labels} value [timestamp] [# exemplar]`. */
function parseSampleLine(line: string, lineNo: number): PromSample {
  let pos = 0;
  const fail = (what: string): never => {
    throw new PrometheusParseError(`${what} at column ${pos + 1}: ${truncate(line)}`, lineNo);
  };
  const skipSpace = () => {
    while (pos < line.length && (line[pos] === ' ' || line[pos] === '\t')) pos++;
  };
  const readQuoted = (): string => {
    // pos is at the opening quote
    pos++;
    let out = '';
    while (pos < line.length && line[pos] !== '"') {
      if (line[pos] === '\\' && pos + 1 < line.length) {
        const next = line[pos + 1];
        out += next === 'n' ? '\n' : next === '"' || next === '\\' ? next : `\\${next}`;
        pos += 2;
      } else {
        out += line[pos++];
      }
    }
    if (line[pos] !== '"') fail('unterminated quoted string');
    pos++;
    return out;
  };

  let name = '';
  if (METRIC_NAME_START.test(line[pos] ?? '')) {
    while (pos < line.length && METRIC_NAME_CHAR.test(line[pos])) name += line[pos++];
  } else if (line[pos] !== '{') {
    fail('expected a metric name');
  }

  const labels: Record<string, string> = {};
  const afterName = pos;
  skipSpace();
  if (line[pos] !== '{') pos = afterName;
  else {
    pos++;
    for (;;) {
      skipSpace();
      if (line[pos] === '}') {
        pos++;
        break;
      }
      let labelName = '';
      if (line[pos] === '"') {
        labelName = readQuoted();
      } else if (LABEL_NAME_START.test(line[pos] ?? '')) {
        while (pos < line.length && LABEL_NAME_CHAR.test(line[pos])) labelName += line[pos++];
      } else {
        fail('expected a label name');
      }
      skipSpace();
      if (line[pos] !== '=') {
        // Prometheus 3 UTF-8 form: a bare quoted string in the braces is the metric name.
        if (name === '' && (line[pos] === ',' || line[pos] === '}')) {
          name = labelName;
        } else {
          fail('expected "="');
        }
      } else {
        pos++;
        skipSpace();
        if (line[pos] !== '"') fail('expected a quoted label value');
        if (Object.prototype.hasOwnProperty.call(labels, labelName)) fail(`duplicate label "${labelName}"`);
        labels[labelName] = readQuoted();
      }
      skipSpace();
      if (line[pos] === ',') {
        pos++;
        continue;
      }
      if (line[pos] === '}') {
        pos++;
        break;
      }
      fail('expected "," or "}"');
    }
  }
  if (name === '') fail('missing metric name');

  const rest = line.slice(pos);
  if (!/^[ \t]/.test(rest)) fail('expected whitespace before the value');
  // OpenMetrics exemplar: everything after " # " is not part of the sample.
  const exemplarAt = rest.indexOf(' # ');
  const fields = (exemplarAt >= 0 ? rest.slice(0, exemplarAt) : rest).trim().split(/[ \t]+/);
  if (fields.length < 1 || fields.length > 2 || fields[0] === '') fail('expected "value [timestamp]"');
  const value = parsePromFloat(fields[0]);
  if (value === undefined) fail(`invalid value "${fields[0]}"`);
  let timestampMs: number | undefined;
  if (fields.length === 2) {
    // Text format 0.0.4: integer milliseconds. OpenMetrics: float seconds.
    if (/^-?\d+$/.test(fields[1])) timestampMs = Number(fields[1]);
    else {
      const seconds = parsePromFloat(fields[1]);
      if (seconds === undefined || !Number.isFinite(seconds)) fail(`invalid timestamp "${fields[1]}"`);
      timestampMs = Math.round((seconds as number) * 1000);
    }
  }
  return timestampMs === undefined
    ? { name, labels, value: value as number }
    : { name, labels, value: value as number, timestampMs };
}

function truncate(line: string): string {
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
