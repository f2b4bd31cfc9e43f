type Json = Record<string, unknown>;
type Path = readonly (string | number)[];

const STRING_SLOT = 0;
const NUMBER_SLOT = 1;

/** Builds the parsed body from its slot values (`values[i]` for slot i) and the constants. */
type BodyBuilder = (values: readonly unknown[], constants: readonly number[]) => Json;

/** A JSON string or number value in the learned text: where it is and what it is. */
interface Leaf {
  readonly path: Path;
  readonly start: number;
  readonly end: number;
  readonly kind: typeof STRING_SLOT | typeof NUMBER_SLOT;
}

/**
 * Values that differ from one response of a server to the next (request id, time, generated
 * text, finish reason, token counts; chat completions, legacy completions and Responses API
 * objects). Every other value stays in the template's literal text, so a body that differs there
 * is not matched (the result would still be right: the template only replaces `JSON.parse`,
 * whatever it holds).
 */
function isSlotPath(path: Path): boolean {
  const [top, position, field, key, , callKey, fnKey] = path;
  if (path.length === 1)
    return top === 'id' || top === 'created' || top === 'created_at' || top === 'system_fingerprint';
  if (top === 'usage') return true;
  if (typeof position !== 'number') return false;
  if (top === 'output') {
    if (path.length === 3) return field === 'id';
    return path.length === 5 && field === 'content' && typeof key === 'number' && path[4] === 'text';
  }
  if (top !== 'choices') return false;
  if (path.length === 3) return field === 'finish_reason' || field === 'stop_reason' || field === 'text';
  if (field !== 'message') return false;
  if (path.length === 4)
    return key === 'content' || key === 'reasoning_content' || key === 'reasoning' || key === 'refusal';
  if (key !== 'tool_calls') return false;
  return path.length === 6
    ? callKey === 'id'
    : path.length === 7 && callKey === 'function' && fnKey === 'arguments';
}

/**
 * A non-streamed `chat.completion` body's text cut at its varying values (see `isSlotPath`),
 * learned from a body that `JSON.parse` read, shared by the requests of one driver: a later
 * body whose text equals the learned one but for those values is read without `JSON.parse`
 * (the engine's non-streamed hot path spent ~11 % of its time there).
 *
 * Contract: `match(text)` returns null, or a value deep-equal to `JSON.parse(text)` (same keys,
 * key order, types and values). It holds because the text between the values is the learned
 * body's own, character for character; a string value follows the JSON string grammar and is
 * taken as is when it has no escape, else read by `JSON.parse` of that string alone; a number
 * value follows the JSON number grammar and is read by `Number` (the same correctly rounded
 * conversion); and the learned body was read alike by `JSON.parse` and by this file's scanner.
 * One per driver: its requests' bodies come from one server, mostly in one shape.
 */
export class CompletionBodyTemplate {
  /** The learned text, its slots as capture groups (see `templatePattern`). */
  private pattern: RegExp = NEVER;
  private kinds: readonly number[] = [];
  private builder: BodyBuilder | null = null;
  private constants: readonly number[] = [];
  /** Matches and misses of the current template, both halved when they sum to `COUNT_WINDOW`. */
  private hits = 0;
  private misses = 0;
  /** Learns in a row whose template did not then match more than it missed. */
  private failedLearns = 0;

  /** The parsed body, or null when the text does not fit the template (parse it in full then). */
  match(text: string): Json | null {
    const parsed = this.read(text);
    if (parsed === null) this.missed();
    else this.hit();
    return parsed;
  }

  private read(text: string): Json | null {
    const builder = this.builder;
    if (builder === null) return null;
    const found = this.pattern.exec(text);
    if (found === null) return null;
    const kinds = this.kinds;
    const values: unknown[] = new Array(kinds.length);
    for (let i = 0; i < kinds.length; i++) {
      const raw = found[i + 1];
      if (kinds[i] === NUMBER_SLOT) values[i] = Number(raw);
      else if (raw.indexOf('\\') === -1) values[i] = raw;
      else {
        const value = parseStringLiteral(`"${raw}"`);
        if (value === null) return null;
        values[i] = value;
      }
    }
    return builder(values, this.constants);
  }

  /**
   * After `JSON.parse(text)` gave `parsed` (and the body was accepted): learns its template when
   * the current one misses more than it matches, at most after 1, 2, 4, ... misses as learns keep
   * failing, so bodies of alternating or never repeating shapes cost a learn only now and then.
   * A text this scanner does not read exactly like `JSON.parse` (a duplicate or `__proto__` key,
   * NaN, not an object) is not learned and the current template stays.
   */
  learn(text: string, parsed: unknown): void {
    const backoff = 2 ** Math.min(this.failedLearns, MAX_BACKOFF_EXPONENT);
    if (this.misses <= this.hits || this.misses < backoff) return;
    this.failedLearns++;
    const template = learnTemplate(text, parsed);
    if (template !== null) {
      const previous = [this.pattern, this.kinds, this.builder, this.constants] as const;
      [this.pattern, this.kinds, this.builder, this.constants] = template;
      // The scanner and JSON.parse must agree on this very text, or the old template stays.
      const check = this.read(text);
      if (check === null || !sameJson(check, parsed))
        [this.pattern, this.kinds, this.builder, this.constants] = previous;
    }
    this.hits = 0;
    this.misses = 0;
  }

  private hit(): void {
    if (++this.hits > this.misses) this.failedLearns = 0;
    if (this.hits + this.misses >= COUNT_WINDOW) this.halveCounts();
  }

  private missed(): void {
    if (++this.misses + this.hits >= COUNT_WINDOW) this.halveCounts();
  }

  private halveCounts(): void {
    this.hits >>= 1;
    this.misses >>= 1;
  }
}

/**
 * Counts kept over about the last 1,000 bodies, so a server whose shape changes after a long
 * run of matches gets a new template within some hundreds of bodies.
 */
const COUNT_WINDOW = 1024;
/** At most one learn per 512 misses for bodies that never repeat a shape (must stay < COUNT_WINDOW / 2 in misses). */
const MAX_BACKOFF_EXPONENT = 9;

/**
 * The pattern holds the learned text; past this size JSON.parse is mostly string scanning, which
 * a match does too.
 */
const MAX_LEARNED_CHARS = 64 * 1024;
/** Deeper bodies are not learned (the scanner and the builder's source recurse per level). */
const MAX_DEPTH = 32;

/** Pattern, slot kinds, builder and constants of `text`, or null when it cannot be a template. */
function learnTemplate(text: string, parsed: unknown): [RegExp, number[], BodyBuilder, number[]] | null {
  if (text.length > MAX_LEARNED_CHARS) return null;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const leaves: Leaf[] = [];
  if (!new JsonScanner(text, leaves).document()) return null;
  const slots = leaves.filter((leaf) => isSlotPath(leaf.path));
  const slotOf = new Map(slots.map((slot, i) => [JSON.stringify(slot.path), i]));
  const constants: number[] = [];
  const builder = compileBuilder(literalSource(parsed, [], slotOf, constants));
  return builder === null
    ? null
    : [templatePattern(text, slots), slots.map((slot) => slot.kind), builder, constants];
}

/** Matches nothing (no template yet). */
const NEVER = /(?!)/;
/** The characters of a JSON string (RFC 8259): anything but a quote, backslash or U+0000-U+001F, or an escape. */
const STRING_BODY = String.raw`([^"\\\u0000-\u001f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\u0000-\u001f]*)*)`;
/** A JSON number (RFC 8259). */
const NUMBER = String.raw`(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)`;

/**
 * The learned text as one anchored regular expression: its literal text escaped, each slot a
 * capture group of exactly the JSON grammar of its kind. One native match checks and cuts a
 * body (a JS loop comparing the literal parts ran 2-3x longer). A string slot ends at the first quote no
 * backslash escapes, so the groups cannot overlap their neighbours and nothing backtracks far.
 */
function templatePattern(text: string, slots: readonly Leaf[]): RegExp {
  let source = '^';
  let pos = 0;
  for (const slot of slots) {
    source += escapeRegExp(text.slice(pos, slot.start)) + (slot.kind === STRING_SLOT ? STRING_BODY : NUMBER);
    pos = slot.end;
  }
  return new RegExp(`${source}${escapeRegExp(text.slice(pos))}$`);
}

function escapeRegExp(literal: string): string {
  return literal.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * JavaScript source of an expression that evaluates to a fresh copy of `value` with slot i read
 * from `v[i]`: an object literal per object, so every template's builder allocates its own
 * fixed shape (a generic copier that met every shape ran 0.4-0.7 us a body, JSON.parse ~1 us).
 * Nothing from the body reaches the source but keys and strings through JSON.stringify (a JSON
 * string is a JavaScript string literal) and slot and constant indices; numbers go through the
 * constants array `c` (no formatting question, -0 included).
 */
function literalSource(
  value: unknown,
  path: (string | number)[],
  slotOf: Map<string, number>,
  constants: number[],
): string {
  const slot = slotOf.get(JSON.stringify(path));
  if (slot !== undefined) return `v[${slot}]`;
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return `c[${constants.push(value) - 1}]`;
  if (Array.isArray(value))
    return `[${value.map((item, i) => literalSource(item, [...path, i], slotOf, constants)).join(',')}]`;
  const entries = Object.entries(value as Json).map(
    ([key, item]) => `${JSON.stringify(key)}:${literalSource(item, [...path, key], slotOf, constants)}`,
  );
  return `{${entries.join(',')}}`;
}

function compileBuilder(source: string): BodyBuilder | null {
  try {
    // Safe by construction: see literalSource (only JSON string literals and indices reach it).
    return new Function('v', 'c', `'use strict'; return ${source};`) as BodyBuilder;
  } catch {
    return null; // code generation from strings disallowed (--disallow-code-generation-from-strings)
  }
}

/**
 * Index of the first quote at or after `from` that no backslash escapes (the end of the string
 * that `from` is in, when the string is valid), or -1.
 */
function closingQuote(text: string, from: number): number {
  let quote = text.indexOf('"', from);
  while (quote !== -1) {
    let k = quote - 1;
    while (k >= from && text.charCodeAt(k) === 92) k--;
    if ((quote - 1 - k) % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return -1;
}

function parseStringLiteral(literal: string): string | null {
  try {
    return JSON.parse(literal) as string;
  } catch {
    return null;
  }
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/** End of a JSON number (`-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`) starting at `pos`, or -1. */
function numberEnd(text: string, pos: number): number {
  let k = pos;
  if (text.charCodeAt(k) === 45) k++;
  const first = text.charCodeAt(k);
  if (first === 48) k++;
  else if (first >= 49 && first <= 57) while (isDigit(text.charCodeAt(k))) k++;
  else return -1;
  if (text.charCodeAt(k) === 46) {
    k++;
    if (!isDigit(text.charCodeAt(k))) return -1;
    while (isDigit(text.charCodeAt(k))) k++;
  }
  const e = text.charCodeAt(k);
  if (e === 101 || e === 69) {
    k++;
    const sign = text.charCodeAt(k);
    if (sign === 43 || sign === 45) k++;
    if (!isDigit(text.charCodeAt(k))) return -1;
    while (isDigit(text.charCodeAt(k))) k++;
  }
  return k;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    if (keysA[i] !== keysB[i]) return false;
    if (!sameJson((a as Json)[keysA[i]], (b as Json)[keysB[i]])) return false;
  }
  return true;
}

/**
 * A strict JSON reader that records where each string and number value lies (learn only, so
 * plain rather than fast). Refuses what `JSON.parse` reads differently from the text's order:
 * a duplicate key (the last one wins) and `__proto__` (a copy would set the prototype).
 */
class JsonScanner {
  private pos = 0;

  constructor(
    private readonly text: string,
    private readonly leaves: Leaf[],
  ) {}

  document(): boolean {
    this.space();
    if (this.text.charCodeAt(this.pos) !== 123 || !this.value([])) return false;
    this.space();
    return this.pos === this.text.length;
  }

  private value(path: (string | number)[]): boolean {
    if (path.length > MAX_DEPTH) return false;
    const code = this.text.charCodeAt(this.pos);
    if (code === 123) return this.object(path);
    if (code === 91) return this.array(path);
    if (code === 34) {
      const start = this.pos + 1;
      if (this.string() === null) return false;
      this.leaves.push({ path, start, end: this.pos - 1, kind: STRING_SLOT });
      return true;
    }
    if (code === 45 || isDigit(code)) {
      const start = this.pos;
      this.pos = numberEnd(this.text, start);
      if (this.pos === -1) return false;
      this.leaves.push({ path, start, end: this.pos, kind: NUMBER_SLOT });
      return true;
    }
    for (const word of ['true', 'false', 'null']) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return true;
      }
    }
    return false;
  }

  private object(path: (string | number)[]): boolean {
    this.pos++;
    this.space();
    const keys = new Set<string>();
    if (this.text.charCodeAt(this.pos) === 125) {
      this.pos++;
      return true;
    }
    for (;;) {
      if (this.text.charCodeAt(this.pos) !== 34) return false;
      const key = this.string();
      if (key === null || key === '__proto__' || keys.has(key)) return false;
      keys.add(key);
      this.space();
      if (this.text.charCodeAt(this.pos) !== 58) return false;
      this.pos++;
      this.space();
      if (!this.value([...path, key])) return false;
      this.space();
      const next = this.text.charCodeAt(this.pos++);
      if (next === 125) return true;
      if (next !== 44) return false;
      this.space();
    }
  }

  private array(path: (string | number)[]): boolean {
    this.pos++;
    this.space();
    if (this.text.charCodeAt(this.pos) === 93) {
      this.pos++;
      return true;
    }
    for (let index = 0; ; index++) {
      if (!this.value([...path, index])) return false;
      this.space();
      const next = this.text.charCodeAt(this.pos++);
      if (next === 93) return true;
      if (next !== 44) return false;
      this.space();
    }
  }

  /** Reads the string at the opening quote; leaves `pos` after the closing one. */
  private string(): string | null {
    const start = this.pos;
    const end = closingQuote(this.text, start + 1);
    if (end === -1) return null;
    this.pos = end + 1;
    return parseStringLiteral(this.text.slice(start, end + 1));
  }

  private space(): void {
    for (;;) {
      const code = this.text.charCodeAt(this.pos);
      if (code !== 32 && code !== 9 && code !== 10 && code !== 13) return;
      this.pos++;
    }
  }
}
