import { readFile } from 'node:fs/promises';
import type { LoadProfile } from '@fathom/contracts';
import { DatasetParseError } from '../dataset/dataset-parse.error';
import { parseCsv } from '../dataset/tabular-dataset.parser';
import { jsonErrorReason } from '../dataset/json-error.util';

export interface ReplayArrival {
  /** Offset from the first recorded arrival, ms. */
  offsetMs: number;
  prompt?: string;
  /** Token-length traces (BurstGPT, Mooncake): the request's input and output lengths. */
  inputTokens?: number;
  outputTokens?: number;
  /** Mooncake: ids of the 512-token blocks the input is made of (equal ids, equal text). */
  prefixBlocks?: number[];
  /** Intent-path replay: the span names of the request's trace, below its root. */
  intentPath?: string[];
}

export type ReplayFormat = Extract<LoadProfile, { type: 'replay' }>['format'];

/** A user intent path drawn from a trace export (spec: strategy orchestrator) and how often it occurs. */
export interface IntentPath {
  path: string[];
  weight: number;
}

/**
 * JSONL: one `{"timestampMs": number | "timestamp": ISO string, "prompt"?: string}` per line.
 * A line that does not parse is refused with its line number.
 */
export function parseReplayJsonl(text: string, file: string): ReplayArrival[] {
  const stamps: { at: number; prompt?: string }[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new DatasetParseError(file, i + 1, jsonErrorReason(error));
    }
    const record = value as { timestampMs?: unknown; timestamp?: unknown; prompt?: unknown };
    const at =
      typeof record.timestampMs === 'number'
        ? record.timestampMs
        : typeof record.timestamp === 'string'
          ? Date.parse(record.timestamp)
          : NaN;
    if (!Number.isFinite(at))
      throw new DatasetParseError(file, i + 1, 'needs a numeric timestampMs or an ISO timestamp');
    if (record.prompt !== undefined && typeof record.prompt !== 'string')
      throw new DatasetParseError(file, i + 1, 'prompt must be a string');
    stamps.push({ at, prompt: record.prompt as string | undefined });
  });
  if (stamps.length === 0) throw new DatasetParseError(file, 1, 'no arrivals');
  return toArrivals(stamps);
}

interface OtlpSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  startTimeUnixNano?: string | number;
  attributes?: { key: string; value?: { stringValue?: string } }[];
}

type OtlpExport = { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };

/**
 * Spans of a single OTLP/JSON export, or of the OpenTelemetry collector's file exporter output:
 * one export (`{"resourceSpans": ...}`) per line. A line that is not an export is refused.
 */
function otlpSpans(text: string, file: string): OtlpSpan[] {
  const spansOf = (doc: OtlpExport) =>
    (doc.resourceSpans ?? []).flatMap((r) => (r.scopeSpans ?? []).flatMap((s) => s.spans ?? []));
  try {
    const doc = JSON.parse(text) as OtlpExport;
    if (!Array.isArray(doc?.resourceSpans)) throw new DatasetParseError(file, 1, 'no resourceSpans');
    return spansOf(doc);
  } catch (error) {
    if (error instanceof DatasetParseError) throw error;
    // Not one JSON document: the file exporter's JSON lines.
  }
  const lines = text.split('\n');
  if (lines.filter((l) => l.trim() !== '').length < 2) {
    throw new DatasetParseError(file, 1, 'not an OTLP/JSON trace export');
  }
  const spans: OtlpSpan[] = [];
  lines.forEach((raw, i) => {
    if (raw.trim() === '') return;
    let doc: OtlpExport;
    try {
      doc = JSON.parse(raw) as OtlpExport;
    } catch (error) {
      throw new DatasetParseError(file, i + 1, jsonErrorReason(error));
    }
    if (!Array.isArray(doc?.resourceSpans)) throw new DatasetParseError(file, i + 1, 'no resourceSpans');
    spans.push(...spansOf(doc));
  });
  return spans;
}

/**
 * Root spans of an OTLP/JSON export are the user's arrivals; `fathom.prompt`/`gen_ai.prompt` carry
 * a prompt. Each arrival carries its trace's intent path (span names below the root, by start).
 */
export function parseReplayOtel(text: string, file: string): ReplayArrival[] {
  const spans = otlpSpans(text, file);
  const roots = spans.filter((s) => !s.parentSpanId);
  if (roots.length === 0) throw new DatasetParseError(file, 1, 'no root spans');
  const paths = pathsByTrace(spans);
  return toArrivals(
    roots.map((span) => {
      const prompt = span.attributes?.find((a) => a.key === 'fathom.prompt' || a.key === 'gen_ai.prompt')
        ?.value?.stringValue;
      const at = nanosToMs(span.startTimeUnixNano);
      if (!Number.isFinite(at))
        throw new DatasetParseError(file, 1, `span ${span.spanId ?? '?'}: startTimeUnixNano is not a number`);
      const stamp: Stamp = { at, prompt };
      stamp.intentPath = paths.get(span.traceId ?? '') ?? [];
      return stamp;
    }),
  );
}

function nanosToMs(nanos: string | number | undefined): number {
  try {
    return Number(BigInt(nanos ?? 0) / 1000n) / 1000;
  } catch {
    return NaN;
  }
}

function pathsByTrace(spans: readonly OtlpSpan[]): Map<string, string[]> {
  const byTrace = new Map<string, OtlpSpan[]>();
  for (const span of spans) {
    const list = byTrace.get(span.traceId ?? '') ?? [];
    list.push(span);
    byTrace.set(span.traceId ?? '', list);
  }
  const paths = new Map<string, string[]>();
  for (const [trace, list] of byTrace)
    paths.set(
      trace,
      list
        .filter((s) => s.parentSpanId)
        .sort((a, b) => nanosToMs(a.startTimeUnixNano) - nanosToMs(b.startTimeUnixNano))
        .map((s) => s.name ?? '?'),
    );
  return paths;
}

/** BurstGPT's CSV: `Timestamp` (s), `Request tokens`, `Response tokens` per row (other columns ignored). */
export function parseReplayBurstGpt(text: string, file: string): ReplayArrival[] {
  const [header, ...rows] = parseCsv(text.replace(/^\uFEFF/, ''), file);
  if (!header) throw new DatasetParseError(file, 1, 'empty: needs a header row');
  const column = (name: string) => {
    const i = header.fields.findIndex((f) => f.trim().toLowerCase() === name.toLowerCase());
    if (i === -1)
      throw new DatasetParseError(
        file,
        1,
        `no "${name}" column (BurstGPT: Timestamp, Request tokens, Response tokens)`,
      );
    return i;
  };
  const [at, input, output] = [column('Timestamp'), column('Request tokens'), column('Response tokens')];
  const stamps = rows.map(({ line, fields }) => {
    const seconds = Number(fields[at]);
    if (fields[at] === undefined || !Number.isFinite(seconds))
      throw new DatasetParseError(file, line, 'Timestamp must be a number (s)');
    return {
      at: seconds * 1000,
      inputTokens: tokenCount(fields[input], file, line, 'Request tokens'),
      outputTokens: tokenCount(fields[output], file, line, 'Response tokens'),
    };
  });
  if (stamps.length === 0) throw new DatasetParseError(file, 2, 'no arrivals');
  return toArrivals(stamps);
}

/** Mooncake's trace: one `{"timestamp": ms, "input_length", "output_length", "hash_ids": [..]}` per line. */
export function parseReplayMooncake(text: string, file: string): ReplayArrival[] {
  const stamps: Stamp[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(raw) as Record<string, unknown>;
    } catch (error) {
      throw new DatasetParseError(file, i + 1, jsonErrorReason(error));
    }
    if (typeof value !== 'object' || value === null)
      throw new DatasetParseError(file, i + 1, 'each line must be a JSON object');
    if (typeof value.timestamp !== 'number' || !Number.isFinite(value.timestamp))
      throw new DatasetParseError(file, i + 1, 'timestamp must be a number (ms)');
    const hashIds = value.hash_ids;
    if (hashIds !== undefined && !(Array.isArray(hashIds) && hashIds.every((h) => Number.isInteger(h))))
      throw new DatasetParseError(file, i + 1, 'hash_ids must be an array of integers');
    const stamp: Stamp = {
      at: value.timestamp,
      inputTokens: tokenCount(value.input_length, file, i + 1, 'input_length'),
      outputTokens: tokenCount(value.output_length, file, i + 1, 'output_length'),
    };
    if (Array.isArray(hashIds) && hashIds.length) stamp.prefixBlocks = hashIds as number[];
    stamps.push(stamp);
  });
  if (stamps.length === 0) throw new DatasetParseError(file, 1, 'no arrivals');
  return toArrivals(stamps);
}

/** Longest input or output a trace row may ask for (the synthetic length's schema bound). */
const MAX_TRACE_TOKENS = 131072;

function tokenCount(value: unknown, file: string, line: number, name: string): number {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n < 0 || n > MAX_TRACE_TOKENS)
    throw new DatasetParseError(file, line, `${name} must be an integer in [0, ${MAX_TRACE_TOKENS}]`);
  return n;
}

/** Intent paths: per trace, span names in start order below the root; weight = share of traces. */
export function extractIntentPaths(text: string, file: string): IntentPath[] {
  return weighted([...pathsByTrace(otlpSpans(text, file)).values()]);
}

/** The weighted intent paths of replayed arrivals (one per root span, i.e. per trace). */
export function intentPathsOf(arrivals: readonly ReplayArrival[]): IntentPath[] {
  return weighted(arrivals.map((a) => a.intentPath ?? []));
}

function weighted(paths: readonly string[][]): IntentPath[] {
  const counts = new Map<string, number>();
  for (const path of paths) {
    const key = path.join('\u0000');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()]
    .map(([key, n]) => ({ path: key === '' ? [] : key.split('\u0000'), weight: n / paths.length }))
    .sort((a, b) => b.weight - a.weight);
}

export async function loadReplay(path: string, format: ReplayFormat): Promise<ReplayArrival[]> {
  const text = await readFile(path, 'utf8').catch((error: Error) => {
    throw new DatasetParseError(path, 0, `cannot read: ${error.message}`);
  });
  switch (format) {
    case 'jsonl':
      return parseReplayJsonl(text, path);
    case 'otel':
      return parseReplayOtel(text, path);
    case 'burstgpt':
      return parseReplayBurstGpt(text, path);
    case 'mooncake':
      return parseReplayMooncake(text, path);
  }
}

type Stamp = { at: number } & Omit<ReplayArrival, 'offsetMs'>;

function toArrivals(stamps: Stamp[]): ReplayArrival[] {
  stamps.sort((a, b) => a.at - b.at);
  const first = stamps[0].at;
  return stamps.map(({ at, ...rest }) => {
    const arrival: ReplayArrival = { offsetMs: at - first };
    if (rest.prompt !== undefined) arrival.prompt = rest.prompt;
    if (rest.inputTokens !== undefined) arrival.inputTokens = rest.inputTokens;
    if (rest.outputTokens !== undefined) arrival.outputTokens = rest.outputTokens;
    if (rest.prefixBlocks !== undefined) arrival.prefixBlocks = rest.prefixBlocks;
    if (rest.intentPath !== undefined) arrival.intentPath = rest.intentPath;
    return arrival;
  });
}
