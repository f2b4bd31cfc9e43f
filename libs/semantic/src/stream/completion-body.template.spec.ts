import fc from 'fast-check';
import { ChatStreamAssembler } from './chat-stream.assembler';
import { CompletionBodyTemplate } from './completion-body.template';
import { StreamParseError } from './stream-parse.error';

type Json = Record<string, unknown>;

/** What the driver does with a non-streamed body: the template, else JSON.parse and learn. */
function readBody(template: CompletionBodyTemplate, text: string): { fast: unknown } | { full: unknown } {
  const fast = template.match(text);
  if (fast !== null) return { fast };
  let full: unknown;
  try {
    full = JSON.parse(text);
  } catch {
    return { full: 'invalid JSON' };
  }
  template.learn(text, full);
  return { full };
}

/** Every key path in enumeration order, with the type of its value: toStrictEqual ignores key order. */
function layout(value: unknown, path = '$'): string[] {
  if (value === null || typeof value !== 'object') return [`${path}:${typeof value}`];
  return Object.entries(value).flatMap(([key, item]) => layout(item, `${path}/${key}`));
}

function expectSameAsJsonParse(fast: unknown, text: string): void {
  const full: unknown = JSON.parse(text); // throws (fails the test) when the template read invalid JSON
  expect(fast).toStrictEqual(full); // values with Object.is: -0 is not 0
  expect(layout(fast)).toEqual(layout(full));
}

const MARK_CONTENT = 'Q@CONTENT@Q';
const MARK_ID = 'Q@ID@Q';
const MARK_PROMPT = 987654321;

/** A chat.completion body shape as servers write it; the marks are later replaced by raw text. */
const completion = fc.record({
  created: fc.option(fc.constantFrom(1764650000, 0), { nil: undefined }),
  fingerprint: fc.constantFrom(undefined, null, 'fp_44709d6fcb'),
  finish: fc.constantFrom('stop', 'length', null),
  stopReason: fc.constantFrom(undefined, null, 128009, '</s>'),
  refusal: fc.constantFrom(undefined, null, "I can't"),
  reasoning: fc.constantFrom(undefined, null, 'think "first"'),
  toolCalls: fc.constantFrom(
    undefined,
    [],
    [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
  ),
  logprobs: fc.constantFrom(undefined, null, { content: [{ token: 'a', logprob: -0.5, top_logprobs: [] }] }),
  usage: fc.constantFrom(undefined, null, 'plain', 'cached', 'details-null'),
  extra: fc.constantFrom(
    undefined,
    { service_tier: null },
    { kv_transfer_params: null, prompt_logprobs: null },
  ),
  reverseKeys: fc.boolean(),
  indent: fc.constantFrom(0, 0, 0, 2, '\t'),
});

type Shape = typeof completion extends fc.Arbitrary<infer T> ? T : never;

function bodyText(c: Shape): string {
  const message: Json = { role: 'assistant', content: MARK_CONTENT };
  if (c.refusal !== undefined) message['refusal'] = c.refusal;
  if (c.reasoning !== undefined) message['reasoning_content'] = c.reasoning;
  if (c.toolCalls !== undefined) message['tool_calls'] = c.toolCalls;
  const choice: Json = { index: 0, message };
  if (c.logprobs !== undefined) choice['logprobs'] = c.logprobs;
  choice['finish_reason'] = c.finish;
  if (c.stopReason !== undefined) choice['stop_reason'] = c.stopReason;
  const body: Json = { id: MARK_ID, object: 'chat.completion' };
  if (c.created !== undefined) body['created'] = c.created;
  body['model'] = 'meta-llama/Llama-3.1-8B-Instruct';
  body['choices'] = [choice];
  if (c.fingerprint !== undefined) body['system_fingerprint'] = c.fingerprint;
  if (c.usage !== undefined) {
    const usage: Json | null =
      c.usage === null ? null : { prompt_tokens: MARK_PROMPT, completion_tokens: 3, total_tokens: 8 };
    if (c.usage === 'cached') usage!['prompt_tokens_details'] = { cached_tokens: 4 };
    if (c.usage === 'details-null') usage!['prompt_tokens_details'] = null;
    body['usage'] = usage;
  }
  Object.assign(body, c.extra);
  const ordered = c.reverseKeys ? Object.fromEntries(Object.entries(body).reverse()) : body;
  return JSON.stringify(ordered, null, c.indent);
}

/** Content as raw JSON text (so some is invalid on purpose): escapes, quotes, controls, non-ASCII. */
const rawContent = fc.oneof(
  fc.string({ maxLength: 12 }).map((s) => JSON.stringify(s).slice(1, -1)),
  fc.string({ maxLength: 12, unit: 'grapheme' }).map((s) => JSON.stringify(s).slice(1, -1)),
  fc.constantFrom(
    '',
    'Paris',
    'a\\nb',
    '\\"quoted\\"',
    '\\u00e9\\ud83d\\ude00',
    '\\ud800',
    '\\\\',
    'tab\\t',
    '"',
    '\\',
    '\\x',
    '\\u12',
    '\u0001',
    '\n',
    '\u2028',
    'é𝄞',
    'a","x":"',
    'a"}],"usage":null}',
  ),
);

/** Numbers as raw JSON text, valid and not: exponents, signs, leading zeros, fractions. */
const rawNumber = fc.oneof(
  fc.nat().map(String),
  fc.double().map((n) => (Number.isFinite(n) ? String(n) : '1')),
  fc.constantFrom(
    '0',
    '-0',
    '7',
    '1e3',
    '1E+2',
    '2.50',
    '-1e-7',
    '1e400',
    '01',
    '1.',
    '.5',
    '-',
    '1e',
    '+1',
    'NaN',
    ' 7',
    '7 ',
    '1_0',
    '0x10',
  ),
);

/** A random edit of the text: JSON-significant characters inserted, deleted or replaced. */
const edit = fc.record({
  at: fc.nat(),
  remove: fc.nat({ max: 3 }),
  insert: fc.constantFrom(
    '',
    '"',
    '\\',
    '{',
    '}',
    '[',
    ']',
    ',',
    ':',
    ' ',
    '\n',
    '0',
    '1',
    'e',
    '-',
    '.',
    'a',
    '\u0001',
    'null',
  ),
});

function applyEdit(text: string, e: { at: number; remove: number; insert: string }): string {
  const at = e.at % (text.length + 1);
  return text.slice(0, at) + e.insert + text.slice(at + e.remove);
}

/** The bodies of one run: mostly one shape, some another, each with its own values and maybe an edit. */
const run = fc
  .tuple(
    completion,
    completion,
    fc.array(
      fc.record({
        second: fc.nat({ max: 4 }).map((n) => n === 0),
        id: fc.oneof(fc.constantFrom('chatcmpl-1', 'c2', 'chatcmpl-é'), rawContent),
        content: rawContent,
        prompt: rawNumber,
        edit: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: edit }),
      }),
      { minLength: 1, maxLength: 30 },
    ),
  )
  .map(([first, second, bodies]) =>
    bodies.map((b) => {
      // Replacer functions: a `$` in the raw text is not a replacement pattern.
      const text = bodyText(b.second ? second : first)
        .replace(MARK_ID, () => b.id)
        .replace(MARK_CONTENT, () => b.content)
        .replace(String(MARK_PROMPT), () => b.prompt);
      return b.edit === undefined ? text : applyEdit(text, b.edit);
    }),
  );

describe(CompletionBodyTemplate.name, () => {
  it('either declines a body or gives exactly what JSON.parse gives (keys, order, types, values)', () => {
    let matched = 0;
    let bodies = 0;
    fc.assert(
      fc.property(run, (texts) => {
        const sut = new CompletionBodyTemplate();
        for (const text of texts) {
          bodies++;
          const read = readBody(sut, text);
          if ('fast' in read) {
            matched++;
            expectSameAsJsonParse(read.fast, text);
          }
        }
      }),
      { numRuns: 2000, seed: 20261202 },
    );
    // The property is about the bodies the template reads: it must have read many.
    expect(matched / bodies).toBeGreaterThan(0.15);
  });

  it('reads a later body of the same shape with new values without JSON.parse', () => {
    const body = (id: string, content: string, prompt: number, finish: string) =>
      `{"id":"${id}","object":"chat.completion","created":1764650000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"${content}","refusal":null,"tool_calls":[]},"logprobs":null,"finish_reason":"${finish}","stop_reason":null}],"system_fingerprint":null,"usage":{"prompt_tokens":${prompt},"total_tokens":${prompt + 2},"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":16}}}`;
    const sut = new CompletionBodyTemplate();
    readBody(sut, body('chatcmpl-1', 'Hello there', 20, 'stop'));
    const parse = jest.spyOn(JSON, 'parse');
    try {
      const next = body('chatcmpl-2f', 'Paris é 𝄞', 7, 'length');
      const fast = sut.match(next);
      expect(parse).not.toHaveBeenCalled();
      expectSameAsJsonParse(fast, next);
      expect(fast).toMatchObject({
        id: 'chatcmpl-2f',
        choices: [{ message: { content: 'Paris é 𝄞' }, finish_reason: 'length' }],
        usage: { prompt_tokens: 7, total_tokens: 9, prompt_tokens_details: { cached_tokens: 16 } },
      });
      // An escaped string is read by JSON.parse of that string alone, not of the body.
      parse.mockClear();
      const escaped = body('chatcmpl-3', 'line\\none \\"q\\" \\u00e9', 1e3, 'stop');
      expectSameAsJsonParse(sut.match(escaped), escaped);
      expect(parse.mock.calls[0]).toEqual(['"line\\none \\"q\\" \\u00e9"']);
    } finally {
      parse.mockRestore();
    }
  });

  it.each([
    ['keys in another order', '{"object":"chat.completion","id":"b","choices":[]}'],
    ['another field', '{"id":"b","object":"chat.completion","choices":[],"x":1}'],
    ['whitespace', '{"id":"b", "object":"chat.completion","choices":[]}'],
    ['a number where a string was', '{"id":5,"object":"chat.completion","choices":[]}'],
    ['a raw control character', '{"id":"b\u0001","object":"chat.completion","choices":[]}'],
    ['a bad escape', '{"id":"b\\x","object":"chat.completion","choices":[]}'],
    ['a trailing comma', '{"id":"b","object":"chat.completion","choices":[],}'],
    ['more text after the body', '{"id":"b","object":"chat.completion","choices":[]} x'],
  ])('declines a body with %s', (_, text) => {
    const sut = new CompletionBodyTemplate();
    readBody(sut, '{"id":"a","object":"chat.completion","choices":[]}');
    expect(sut.match('{"id":"c","object":"chat.completion","choices":[]}')).toEqual({
      id: 'c',
      object: 'chat.completion',
      choices: [],
    });
    expect(sut.match(text)).toBeNull();
  });

  it.each([
    ['a duplicate key (JSON.parse keeps the last)', '{"id":"a","choices":[],"id":"b"}'],
    ['a __proto__ key', '{"id":"a","choices":[],"__proto__":{"x":1}}'],
    ['NaN, which the assembler repairs', '{"id":"a","choices":[],"usage":{"prompt_tokens":NaN}}'],
    ['nesting deeper than the scanner reads', `{"id":"a","x":${'['.repeat(5000)}${']'.repeat(5000)}}`],
  ])('learns no template from a body with %s', (_, text) => {
    const sut = new CompletionBodyTemplate();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = JSON.parse(text.replace('NaN', 'null'));
    }
    sut.match(text);
    sut.learn(text, parsed);
    expect(sut.match(text)).toBeNull();
  });

  it('follows a server whose body shape changes, and keeps reading alternating shapes', () => {
    const a = (n: number) =>
      `{"id":"a${n}","choices":[{"index":0,"message":{"content":"x${n}"},"finish_reason":"stop"}]}`;
    const b = (n: number) =>
      `{"id":"b${n}","choices":[{"index":0,"message":{"content":"y${n}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":${n}}}`;
    const sut = new CompletionBodyTemplate();
    const fastCount = (texts: string[]) => texts.filter((t) => 'fast' in readBody(sut, t)).length;
    const range = (n: number) => Array.from({ length: n }, (_, i) => i);

    expect(fastCount(range(2000).map(a))).toBe(1999);
    // After a long run of A, B takes over within some hundred bodies, then every body is read.
    const afterChange = range(2000).map((n) => 'fast' in readBody(sut, b(n)));
    expect(afterChange.indexOf(true)).toBeGreaterThan(0);
    expect(afterChange.indexOf(true)).toBeLessThan(1024);
    expect(afterChange.slice(1024).every(Boolean)).toBe(true);
    // A and B alternating: one of the two shapes stays read.
    expect(fastCount(range(4000).map((n) => (n % 2 === 0 ? a(n) : b(n))))).toBeGreaterThan(1500);
  });
});

describe('ChatStreamAssembler with a shared body template', () => {
  function assemble(text: string, template?: CompletionBodyTemplate) {
    const assembler = new ChatStreamAssembler({ bodyTemplate: template });
    let step: unknown;
    try {
      step = assembler.accept(text);
    } catch (error) {
      step =
        error instanceof StreamParseError
          ? `error ${error.kind}: ${error.message}`
          : `crash ${String(error)}`;
    }
    return { step, result: assembler.result() };
  }

  it('gives each response what an assembler without it gives', () => {
    const error = fc.constantFrom(
      '{"error":{"message":"overloaded","type":"server_error","code":503}}',
      '{"id":"x","object":"error","message":"bad"}',
      '{"id":"x","choices":[{"index":0,"message":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":NaN}}',
    );
    fc.assert(
      fc.property(run, fc.array(fc.tuple(fc.nat(), error), { maxLength: 3 }), (texts, errors) => {
        for (const [at, text] of errors) texts.splice(at % (texts.length + 1), 0, text);
        const shared = new CompletionBodyTemplate();
        for (const text of texts) expect(assemble(text, shared)).toEqual(assemble(text));
      }),
      { numRuns: 1000, seed: 20261203 },
    );
  });
});
