import type { ColumnMapping } from '@fathom/contracts';
import { DatasetParseError } from './dataset-parse.error';
import type { MediaPart } from './prompt-item';
import { jsonErrorReason } from './json-error.util';

/** One row of a JSONL or CSV dataset, mapped by the campaign's columns. */
export interface MappedRow {
  prompt: string;
  outputTokens?: number;
  system?: string;
  parts?: MediaPart[];
}

/** Longest image reference or audio payload kept per row (a data: URL is the image itself). */
const MAX_MEDIA_CHARS = 20 * 1024 * 1024;

function mediaParts(
  get: (name: string) => unknown,
  columns: ColumnMapping,
  file: string,
  line: number,
): MediaPart[] {
  const parts: MediaPart[] = [];
  if (columns.image !== undefined) {
    const value = get(columns.image);
    const urls =
      value === undefined || value === '' || value === null ? [] : Array.isArray(value) ? value : [value];
    for (const url of urls) {
      if (typeof url !== 'string' || !/^(https?:|data:image\/)/.test(url) || url.length > MAX_MEDIA_CHARS)
        throw new DatasetParseError(file, line, `"${columns.image}" must be http(s) or data:image/ URLs`);
      parts.push({ type: 'image_url', image_url: { url } });
    }
  }
  if (columns.audio !== undefined) {
    const raw = get(columns.audio);
    if (raw !== undefined && raw !== null && raw !== '') {
      const value = raw as { data?: unknown; format?: unknown };
      if (
        typeof value !== 'object' ||
        typeof value.data !== 'string' ||
        value.data.length > MAX_MEDIA_CHARS ||
        (value.format !== 'wav' && value.format !== 'mp3')
      )
        throw new DatasetParseError(
          file,
          line,
          `"${columns.audio}" must be {"data": base64, "format": "wav"|"mp3"}`,
        );
      parts.push({ type: 'input_audio', input_audio: { data: value.data, format: value.format } });
    }
  }
  return parts;
}

/**
 * RFC 4180 CSV: quoted fields may hold the delimiter, quotes (doubled) and newlines; CRLF or LF.
 * Returns rows with the (1-based) line each starts on. A quote left open is refused.
 */
export function parseCsv(text: string, file: string, delimiter = ','): { line: number; fields: string[] }[] {
  const rows: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  let i = 0;
  const endRow = () => {
    fields.push(field);
    if (!(fields.length === 1 && fields[0] === '')) rows.push({ line: rowLine, fields });
    fields = [];
    field = '';
  };
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else {
        if (c === '\n') line++;
        field += c;
      }
      i++;
      continue;
    }
    if (c === '"' && field === '') quoted = true;
    else if (c === delimiter) {
      fields.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRow();
      line++;
      rowLine = line;
    } else field += c;
    i++;
  }
  if (quoted) throw new DatasetParseError(file, rowLine, 'a quoted field is not closed');
  if (field !== '' || fields.length) endRow();
  return rows;
}

function outputTokensOf(value: unknown, file: string, line: number, column: string): number {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && value.trim() !== ''
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n <= 0)
    throw new DatasetParseError(file, line, `"${column}" must be a positive integer (output tokens)`);
  return n;
}

function mapped(
  get: (name: string) => unknown,
  columns: ColumnMapping,
  file: string,
  line: number,
): MappedRow {
  const prompt = get(columns.prompt);
  if (typeof prompt !== 'string' || prompt === '')
    throw new DatasetParseError(file, line, `"${columns.prompt}" must be a non-empty string`);
  const row: MappedRow = { prompt };
  if (columns.outputTokens !== undefined)
    row.outputTokens = outputTokensOf(get(columns.outputTokens), file, line, columns.outputTokens);
  const parts = mediaParts(get, columns, file, line);
  if (parts.length) row.parts = parts;
  if (columns.system !== undefined) {
    const system = get(columns.system);
    if (typeof system === 'string' && system !== '') row.system = system;
    else if (system !== undefined && system !== '' && system !== null)
      throw new DatasetParseError(file, line, `"${columns.system}" must be a string`);
  }
  return row;
}

/** A CSV dataset: the header names the columns; every row needs the prompt column. */
export function parseCsvDataset(
  text: string,
  file: string,
  columns: ColumnMapping,
  delimiter = ',',
): MappedRow[] {
  const [header, ...rows] = parseCsv(text.replace(/^\uFEFF/, ''), file, delimiter);
  if (!header) throw new DatasetParseError(file, 1, 'empty: needs a header row');
  const index = new Map(header.fields.map((name, i) => [name.trim(), i]));
  for (const name of [columns.prompt, columns.outputTokens, columns.system])
    if (name !== undefined && !index.has(name))
      throw new DatasetParseError(file, 1, `no column "${name}" in the header (${header.fields.join(', ')})`);
  const out = rows.map(({ line, fields }) => {
    if (fields.length !== header.fields.length)
      throw new DatasetParseError(
        file,
        line,
        `${fields.length} fields, the header has ${header.fields.length}`,
      );
    return mapped((name) => fields[index.get(name)!], columns, file, line);
  });
  if (out.length === 0) throw new DatasetParseError(file, 2, 'no rows');
  return out;
}

/** A JSONL dataset mapped by field names (top-level fields of each line's object). */
export function parseJsonlDataset(text: string, file: string, columns: ColumnMapping): MappedRow[] {
  const out: MappedRow[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new DatasetParseError(file, i + 1, jsonErrorReason(error));
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new DatasetParseError(file, i + 1, 'each line must be a JSON object');
    const record = value as Record<string, unknown>;
    out.push(
      mapped((name) => (Object.hasOwn(record, name) ? record[name] : undefined), columns, file, i + 1),
    );
  });
  if (out.length === 0) throw new DatasetParseError(file, 1, 'no prompts');
  return out;
}
