import { readFile } from 'node:fs/promises';
import { DatasetParseError } from '../dataset/dataset-parse.error';

export interface ReplayArrival {
  /** Offset from the first recorded arrival, ms. */
  offsetMs: number;
  prompt?: string;
}

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
      throw new DatasetParseError(file, i + 1, `not JSON (${(error as Error).message})`);
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

function otlpSpans(text: string, file: string): OtlpSpan[] {
  let doc: { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
  try {
    doc = JSON.parse(text);
  } catch (error) {
    const position = /position (\d+)/.exec((error as Error).message);
    const line = position ? text.slice(0, Number(position[1])).split('\n').length : 1;
    throw new DatasetParseError(file, line, 'not an OTLP/JSON trace export');
  }
  if (!Array.isArray(doc.resourceSpans)) throw new DatasetParseError(file, 1, 'no resourceSpans');
  return doc.resourceSpans.flatMap((r) => (r.scopeSpans ?? []).flatMap((s) => s.spans ?? []));
}

/** Root spans of an OTLP/JSON export are the user's arrivals; `fathom.prompt`/`gen_ai.prompt` carry a prompt. */
export function parseReplayOtel(text: string, file: string): ReplayArrival[] {
  const roots = otlpSpans(text, file).filter((s) => !s.parentSpanId);
  if (roots.length === 0) throw new DatasetParseError(file, 1, 'no root spans');
  return toArrivals(
    roots.map((span) => {
      const prompt = span.attributes?.find((a) => a.key === 'fathom.prompt' || a.key === 'gen_ai.prompt')
        ?.value?.stringValue;
      return { at: Number(BigInt(span.startTimeUnixNano ?? 0) / 1000n) / 1000, prompt };
    }),
  );
}

/** Intent paths: per trace, span names in start order below the root; weight = share of traces. */
export function extractIntentPaths(text: string, file: string): IntentPath[] {
  const byTrace = new Map<string, OtlpSpan[]>();
  for (const span of otlpSpans(text, file)) {
    const list = byTrace.get(span.traceId ?? '') ?? [];
    list.push(span);
    byTrace.set(span.traceId ?? '', list);
  }
  const counts = new Map<string, number>();
  for (const spans of byTrace.values()) {
    const key = spans
      .filter((s) => s.parentSpanId)
      .sort((a, b) => (BigInt(a.startTimeUnixNano ?? 0) < BigInt(b.startTimeUnixNano ?? 0) ? -1 : 1))
      .map((s) => s.name ?? '?')
      .join('\u0000');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()]
    .map(([key, n]) => ({ path: key === '' ? [] : key.split('\u0000'), weight: n / byTrace.size }))
    .sort((a, b) => b.weight - a.weight);
}

export async function loadReplay(path: string, format: 'jsonl' | 'otel'): Promise<ReplayArrival[]> {
  const text = await readFile(path, 'utf8').catch((error: Error) => {
    throw new DatasetParseError(path, 0, `cannot read: ${error.message}`);
  });
  return format === 'jsonl' ? parseReplayJsonl(text, path) : parseReplayOtel(text, path);
}

function toArrivals(stamps: { at: number; prompt?: string }[]): ReplayArrival[] {
  stamps.sort((a, b) => a.at - b.at);
  const first = stamps[0].at;
  return stamps.map((s) =>
    s.prompt === undefined ? { offsetMs: s.at - first } : { offsetMs: s.at - first, prompt: s.prompt },
  );
}
