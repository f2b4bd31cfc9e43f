import type { TokenLogprob } from '@fathom/contracts';
import type { CompletionBodyTemplate } from './completion-body.template';
import { StreamParseError, excerpt } from './stream-parse.error';

/** What one `data:` payload contributed. */
export interface StreamStep {
  /** `[DONE]` was seen (this payload or an earlier one). */
  done: boolean;
  /** Text appended to the content of choice 0 by this payload ('' when none). */
  contentDelta: string;
  /**
   * Tokens this payload carried, over all choices: the number of logprob entries when the
   * server sent logprobs, else 1 for a payload with non-empty content (or completions `text`),
   * else 0. Reasoning, refusal and tool-call argument fragments are not content and count 0.
   */
  tokens: number;
}

export interface ParsedToolCall {
  index: number;
  id: string | null;
  name: string;
  /** Argument fragments concatenated in arrival order (JSON text as the model wrote it). */
  arguments: string;
}

export interface ParsedUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** `prompt_tokens_details.cached_tokens`; null when the server did not report it. */
  cachedTokens: number | null;
}

export interface ParsedChoice {
  index: number;
  content: string;
  /** `delta.reasoning_content` / `delta.reasoning` (vLLM, DeepSeek), kept apart from content. */
  reasoningContent: string;
  refusal: string;
  tokens: number;
  toolCalls: ParsedToolCall[];
  finishReason: string | null;
  logprobs: TokenLogprob[];
}

/**
 * How the stream ended: `done-marker` (`data: [DONE]`), `finish-reason` (every choice finished
 * but no marker, or a Responses API `response.completed`), `truncated` (neither), `empty`
 * (no payload at all).
 */
export type StreamTermination = 'done-marker' | 'finish-reason' | 'truncated' | 'empty';

/**
 * One assembled response. Top-level `content`, `toolCalls`, `finishReason` and `logprobs` are
 * those of choice 0 (the lowest index seen); `tokens` counts every choice, like `usage`
 * does; `choices` has each choice when `n > 1`.
 */
export interface ParsedChatStream {
  id: string | null;
  model: string | null;
  content: string;
  tokens: number;
  toolCalls: ParsedToolCall[];
  finishReason: string | null;
  usage: ParsedUsage | null;
  logprobs: TokenLogprob[];
  choices: ParsedChoice[];
  termination: StreamTermination;
  /** Data payloads accepted, `[DONE]` included. */
  events: number;
}

export interface ChatStreamAssemblerOptions {
  /** Keep per-token logprobs in the result (default true). Counting happens either way. */
  keepLogprobs?: boolean;
  /**
   * Shared by the assemblers of one target's non-streamed responses: a body shaped like an
   * earlier one is read without JSON.parse (same result; see `CompletionBodyTemplate`).
   */
  bodyTemplate?: CompletionBodyTemplate | null;
}

/**
 * vLLM (and the OpenAI schema) write a logprob of minus infinity as -9999.0 so the JSON stays
 * valid. Values at or below it mean probability 0; they are kept as numbers so the contract's
 * `z.number()` (finite) holds.
 */
export const NEG_INF_LOGPROB = -9999;

interface ChoiceState {
  index: number;
  content: string;
  reasoningContent: string;
  refusal: string;
  tokens: number;
  toolCalls: Map<number, ParsedToolCall>;
  finishReason: string | null;
  logprobs: TokenLogprob[];
}

type Json = Record<string, unknown>;

/** A content-only chunk's text around its content string (see `ChatStreamAssembler.acceptLikeTemplate`). */
interface ContentTemplate {
  /** Everything up to and including the content string's opening quote. */
  readonly prefix: string;
  /** From the content string's closing quote to the end. */
  readonly suffix: string;
  readonly index: number;
}

const CONTENT_KEY = '"content":"';
const isAbsent = (value: unknown) => value === undefined || value === null;

/**
 * The template of a parsed chunk whose only effect is one choice's `delta.content` (no usage,
 * error, finish reason, logprobs, tool call, reasoning, refusal or text; one `"content":"` in
 * its text, holding exactly the parsed string, so nothing in it was escaped): a later payload
 * equal to it but for a plain content string has the same effect with that string. Null otherwise.
 */
function contentOnlyTemplate(chunk: Json, raw: string): ContentTemplate | null {
  if (!isAbsent(chunk['usage']) || chunk['error'] !== undefined || chunk['type'] !== undefined) return null;
  const choices = chunk['choices'];
  if (!Array.isArray(choices) || choices.length !== 1) return null;
  const c = choices[0] as Json;
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return null;
  if (!isAbsent(c['finish_reason']) || !isAbsent(c['logprobs']) || c['text'] !== undefined) return null;
  if (c['message'] !== undefined || c['error'] !== undefined) return null;
  const delta = c['delta'] as Json;
  if (delta === null || typeof delta !== 'object' || Array.isArray(delta)) return null;
  const content = delta['content'];
  if (typeof content !== 'string') return null;
  for (const key of ['reasoning_content', 'reasoning', 'refusal', 'tool_calls', 'function_call']) {
    if (!isAbsent(delta[key])) return null;
  }
  const at = raw.indexOf(CONTENT_KEY);
  if (at === -1 || raw.indexOf(CONTENT_KEY, at + 1) !== -1) return null;
  const start = at + CONTENT_KEY.length;
  const end = start + content.length;
  if (raw.slice(start, end) !== content || raw.charCodeAt(end) !== 34) return null;
  return {
    prefix: raw.slice(0, start),
    suffix: raw.slice(end),
    index: typeof c['index'] === 'number' ? c['index'] : 0,
  };
}

/**
 * Folds the `data:` payloads of one OpenAI-compatible stream into a response: chat completions
 * (`choices[].delta`), legacy completions (`choices[].text`), a non-streamed
 * `chat.completion` object (`choices[].message`) and the Responses API events
 * (`response.output_text.delta`, ...). Unknown fields are ignored; a known field of the wrong
 * type, broken JSON, or an error object throws `StreamParseError` (the state so far is kept,
 * so `result()` still gives what arrived before it). One instance per stream.
 */
export class ChatStreamAssembler {
  private readonly keepLogprobs: boolean;
  private readonly bodyTemplate: CompletionBodyTemplate | null;
  private readonly choices = new Map<number, ChoiceState>();
  private id: string | null = null;
  private model: string | null = null;
  private usage: ParsedUsage | null = null;
  private done = false;
  private responseCompleted = false;
  private events = 0;
  private tokens = 0;
  /** Lowest choice index in `choices` (kept so each chunk does not walk the map). */
  private lowestSeen = Infinity;
  /** The last parsed chunk, when it carried nothing but one choice's content (see `acceptLikeTemplate`). */
  private template: ContentTemplate | null = null;

  constructor(options: ChatStreamAssemblerOptions = {}) {
    this.keepLogprobs = options.keepLogprobs ?? true;
    this.bodyTemplate = options.bodyTemplate ?? null;
  }

  accept(data: string): StreamStep {
    this.events++;
    if (this.done) return { done: true, contentDelta: '', tokens: 0 };
    // A payload opening with `{` is neither `[DONE]` nor blank: no trim (the usual chunk).
    if (data.charCodeAt(0) !== 123) {
      const trimmed = data.trim();
      if (trimmed === '[DONE]') {
        this.done = true;
        return { done: true, contentDelta: '', tokens: 0 };
      }
      if (trimmed.length === 0) return { done: false, contentDelta: '', tokens: 0 };
    }
    if (this.template !== null) {
      const step = this.acceptLikeTemplate(this.template, data);
      if (step !== null) return step;
    }
    const matched = this.bodyTemplate === null ? null : this.bodyTemplate.match(data);
    const chunk = matched ?? this.parseJson(data);
    if (chunk === null || typeof chunk !== 'object' || Array.isArray(chunk)) {
      throw this.fail('unexpected-shape', 'payload is not a JSON object', data);
    }
    const step = this.applyChunk(chunk as Json, data);
    this.template = contentOnlyTemplate(chunk as Json, data);
    if (matched === null && this.bodyTemplate !== null) this.bodyTemplate.learn(data, chunk);
    return step;
  }

  /**
   * A payload that is the last fully parsed content-only chunk's text with another plain content
   * string: the same JSON but for that string, so the same step without parsing it (servers send
   * every token's chunk in one shape; parsing each was a third of the engine's time per stream).
   * Null when the payload differs anywhere else, or its content is not a plain string body.
   */
  private acceptLikeTemplate(t: ContentTemplate, data: string): StreamStep | null {
    const end = data.length - t.suffix.length;
    if (end < t.prefix.length || !data.startsWith(t.prefix) || !data.endsWith(t.suffix)) return null;
    for (let k = t.prefix.length; k < end; k++) {
      const code = data.charCodeAt(k);
      // A quote or backslash would change the JSON's shape or need unescaping; a control character is invalid JSON.
      if (code === 34 || code === 92 || code < 32) return null;
    }
    const content = data.slice(t.prefix.length, end);
    const state = this.choice(t.index);
    state.content += content;
    const tokens = content.length > 0 ? 1 : 0;
    state.tokens += tokens;
    this.tokens += tokens;
    return { done: false, contentDelta: t.index === this.lowestSeen ? content : '', tokens };
  }

  result(): ParsedChatStream {
    const choices = [...this.choices.values()]
      .sort((a, b) => a.index - b.index)
      .map((c): ParsedChoice => ({
        index: c.index,
        content: c.content,
        reasoningContent: c.reasoningContent,
        refusal: c.refusal,
        tokens: c.tokens,
        toolCalls: [...c.toolCalls.values()].sort((a, b) => a.index - b.index).map((t) => ({ ...t })),
        finishReason: c.finishReason,
        logprobs: c.logprobs.slice(),
      }));
    const first = choices[0];
    return {
      id: this.id,
      model: this.model,
      content: first?.content ?? '',
      tokens: this.tokens,
      toolCalls: first?.toolCalls ?? [],
      finishReason: first?.finishReason ?? null,
      usage: this.usage === null ? null : { ...this.usage },
      logprobs: first?.logprobs ?? [],
      choices,
      termination: this.termination(choices),
      events: this.events,
    };
  }

  private termination(choices: ParsedChoice[]): StreamTermination {
    if (this.done) return 'done-marker';
    if (this.events === 0) return 'empty';
    if (this.responseCompleted) return 'finish-reason';
    if (choices.length > 0 && choices.every((c) => c.finishReason !== null)) return 'finish-reason';
    return 'truncated';
  }

  private applyChunk(chunk: Json, raw: string): StreamStep {
    this.checkError(chunk, raw);
    if (this.id === null && typeof chunk['id'] === 'string') this.id = chunk['id'];
    if (this.model === null && typeof chunk['model'] === 'string') this.model = chunk['model'];
    const usage = chunk['usage'];
    if (usage !== undefined && usage !== null) this.usage = this.parseUsage(usage, raw);

    if (typeof chunk['type'] === 'string' && chunk['choices'] === undefined) {
      return this.applyResponsesEvent(chunk, chunk['type'], raw);
    }
    const choices = chunk['choices'];
    if (chunk['object'] === 'response' && choices === undefined)
      return this.applyResponseDocument(chunk, raw);
    if (choices === undefined || choices === null) return { done: false, contentDelta: '', tokens: 0 };
    if (!Array.isArray(choices)) throw this.fail('unexpected-shape', '`choices` is not an array', raw);

    let contentDelta = '';
    let tokens = 0;
    const lowest = this.lowestIndex(choices);
    for (let position = 0; position < choices.length; position++) {
      const choice: unknown = choices[position];
      if (choice === null || typeof choice !== 'object' || Array.isArray(choice)) {
        throw this.fail('unexpected-shape', `choices[${position}] is not an object`, raw);
      }
      const c = choice as Json;
      const index = typeof c['index'] === 'number' ? c['index'] : position;
      const state = this.choice(index);
      const delta = this.applyChoice(state, c, raw);
      tokens += delta.tokens;
      if (index === lowest) contentDelta += delta.content;
    }
    this.tokens += tokens;
    return { done: false, contentDelta, tokens };
  }

  /** Content of the choice that `result()` reports: the lowest index seen so far or now. */
  private lowestIndex(choices: unknown[]): number {
    let lowest = this.lowestSeen;
    for (let i = 0; i < choices.length; i++) {
      const c = choices[i] as Json | null;
      const index = c !== null && typeof c === 'object' && typeof c['index'] === 'number' ? c['index'] : i;
      lowest = Math.min(lowest, index);
    }
    return lowest;
  }

  private applyChoice(state: ChoiceState, c: Json, raw: string): { content: string; tokens: number } {
    // Streamed chat uses `delta`, a whole chat.completion uses `message`, completions use `text`.
    const message = c['delta'] !== undefined ? c['delta'] : c['message'];
    let content = '';
    if (message !== undefined && message !== null) {
      if (typeof message !== 'object' || Array.isArray(message)) {
        throw this.fail('unexpected-shape', '`delta` is not an object', raw);
      }
      const m = message as Json;
      content = this.text(m['content'], 'delta.content', raw);
      const reasoning = m['reasoning_content'] ?? m['reasoning'];
      if (typeof reasoning === 'string') state.reasoningContent += reasoning;
      if (typeof m['refusal'] === 'string') state.refusal += m['refusal'];
      const toolCalls = m['tool_calls'];
      if (toolCalls !== undefined && toolCalls !== null) {
        if (!Array.isArray(toolCalls))
          throw this.fail('unexpected-shape', '`tool_calls` is not an array', raw);
        for (let i = 0; i < toolCalls.length; i++) this.mergeToolCall(state, toolCalls[i], i, raw);
      }
      const functionCall = m['function_call'];
      if (functionCall !== undefined && functionCall !== null) {
        // Deprecated single-function form: one call, index 0.
        this.mergeToolCall(state, { index: 0, function: functionCall }, 0, raw);
      }
    }
    if (c['text'] !== undefined) content += this.text(c['text'], 'choices[].text', raw);
    state.content += content;

    let tokens = this.applyLogprobs(state, c['logprobs'], raw);
    if (tokens === 0 && content.length > 0) tokens = 1;
    state.tokens += tokens;

    const finish = c['finish_reason'];
    if (typeof finish === 'string') state.finishReason = finish;
    else if (finish !== undefined && finish !== null) {
      throw this.fail('unexpected-shape', '`finish_reason` is not a string', raw);
    }
    return { content, tokens };
  }

  private text(value: unknown, what: string, raw: string): string {
    if (value === undefined || value === null) return '';
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) {
      // Content-part arrays (`[{type: "text", text}]`) as some multimodal servers send them.
      let joined = '';
      for (const part of value) {
        if (typeof part === 'string') joined += part;
        else if (part !== null && typeof part === 'object' && typeof (part as Json)['text'] === 'string') {
          joined += (part as Json)['text'] as string;
        }
      }
      return joined;
    }
    throw this.fail('unexpected-shape', `\`${what}\` is not a string`, raw);
  }

  private mergeToolCall(state: ChoiceState, value: unknown, position: number, raw: string): void {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw this.fail('unexpected-shape', 'a tool call delta is not an object', raw);
    }
    const delta = value as Json;
    const id = typeof delta['id'] === 'string' && delta['id'].length > 0 ? delta['id'] : null;
    let index: number;
    if (typeof delta['index'] === 'number') index = delta['index'];
    else {
      // Servers that omit `index`: find the call by id, else a new call when an id appears,
      // else continue the last one.
      const byId = id === null ? undefined : [...state.toolCalls.values()].find((t) => t.id === id);
      if (byId !== undefined) index = byId.index;
      else if (id !== null || state.toolCalls.size === 0)
        index = state.toolCalls.size === 0 ? position : maxKey(state.toolCalls) + 1;
      else index = maxKey(state.toolCalls);
    }
    let call = state.toolCalls.get(index);
    if (call === undefined) {
      call = { index, id: null, name: '', arguments: '' };
      state.toolCalls.set(index, call);
    }
    if (id !== null && call.id === null) call.id = id;
    const fn = delta['function'];
    if (fn === undefined || fn === null) return;
    if (typeof fn !== 'object' || Array.isArray(fn)) {
      throw this.fail('unexpected-shape', 'a tool call `function` is not an object', raw);
    }
    const f = fn as Json;
    const name = f['name'];
    // OpenAI sends the name once; some servers repeat it on every delta: never double it.
    if (typeof name === 'string' && name.length > 0 && name !== call.name) call.name += name;
    const args = f['arguments'];
    if (typeof args === 'string') call.arguments += args;
    else if (args !== undefined && args !== null) {
      // A few servers send the arguments as an object rather than JSON text.
      if (typeof args !== 'object')
        throw this.fail('unexpected-shape', 'tool call `arguments` is not a string', raw);
      call.arguments += JSON.stringify(args);
    }
  }

  /** Returns the number of token entries. */
  private applyLogprobs(state: ChoiceState, value: unknown, raw: string): number {
    if (value === undefined || value === null) return 0;
    // A bare array of entries (some servers drop the `content` wrapper).
    if (Array.isArray(value)) return this.chatLogprobEntries(state, value, raw);
    if (typeof value !== 'object') throw this.fail('unexpected-shape', '`logprobs` is not an object', raw);
    const lp = value as Json;
    const content = lp['content'];
    if (Array.isArray(content)) return this.chatLogprobEntries(state, content, raw);
    if (content !== undefined && content !== null) {
      throw this.fail('unexpected-shape', '`logprobs.content` is not an array', raw);
    }
    const tokens = lp['tokens'];
    if (Array.isArray(tokens)) return this.completionLogprobs(state, lp, tokens, raw);
    return 0;
  }

  private chatLogprobEntries(state: ChoiceState, entries: unknown[], raw: string): number {
    for (const entry of entries) {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
        throw this.fail('unexpected-shape', 'a logprob entry is not an object', raw);
      }
      const e = entry as Json;
      const token = this.tokenText(e, raw);
      const logprob = this.logprob(e['logprob'], raw);
      const topRaw = e['top_logprobs'];
      const top: { token: string; logprob: number }[] = [];
      if (Array.isArray(topRaw)) {
        for (const t of topRaw) {
          if (t === null || typeof t !== 'object' || Array.isArray(t)) {
            throw this.fail('unexpected-shape', 'a top_logprobs entry is not an object', raw);
          }
          top.push({
            token: this.tokenText(t as Json, raw),
            logprob: this.logprob((t as Json)['logprob'], raw),
          });
        }
      } else if (topRaw !== undefined && topRaw !== null) {
        throw this.fail('unexpected-shape', '`top_logprobs` is not an array', raw);
      }
      if (this.keepLogprobs) state.logprobs.push({ token, logprob, top });
    }
    return entries.length;
  }

  /** Legacy completions: `{tokens[], token_logprobs[], top_logprobs: [{token: logprob}]}`. */
  private completionLogprobs(state: ChoiceState, lp: Json, tokens: unknown[], raw: string): number {
    const logprobs = lp['token_logprobs'];
    const tops = lp['top_logprobs'];
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i];
      if (typeof token !== 'string')
        throw this.fail('unexpected-shape', '`logprobs.tokens` holds a non-string', raw);
      const logprob = this.logprob(Array.isArray(logprobs) ? logprobs[i] : null, raw);
      const top: { token: string; logprob: number }[] = [];
      const topMap = Array.isArray(tops) ? tops[i] : null;
      if (topMap !== null && typeof topMap === 'object' && !Array.isArray(topMap)) {
        for (const [t, l] of Object.entries(topMap as Json))
          top.push({ token: t, logprob: this.logprob(l, raw) });
        top.sort((a, b) => b.logprob - a.logprob);
      }
      if (this.keepLogprobs) state.logprobs.push({ token, logprob, top });
    }
    return tokens.length;
  }

  private tokenText(e: Json, raw: string): string {
    const token = e['token'];
    if (typeof token === 'string') return token;
    const bytes = e['bytes'];
    if (Array.isArray(bytes) && bytes.every((b) => typeof b === 'number')) {
      return Buffer.from(bytes as number[]).toString('utf8');
    }
    throw this.fail('unexpected-shape', 'a logprob entry has no `token` string', raw);
  }

  /** A number (<= -9999 stays as the finite sentinel), or null meaning unknown (-9999). */
  private logprob(value: unknown, raw: string): number {
    if (typeof value === 'number')
      return Number.isFinite(value) ? Math.max(value, NEG_INF_LOGPROB) : NEG_INF_LOGPROB;
    if (value === null || value === undefined) return NEG_INF_LOGPROB;
    throw this.fail('unexpected-shape', '`logprob` is not a number', raw);
  }

  private parseUsage(value: unknown, raw: string): ParsedUsage {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw this.fail('unexpected-shape', '`usage` is not an object', raw);
    }
    const u = value as Json;
    // Chat/completions names first, Responses API names (`input_tokens`, ...) second.
    const prompt = this.count(u['prompt_tokens'] ?? u['input_tokens'], raw);
    const completion = this.count(u['completion_tokens'] ?? u['output_tokens'], raw);
    const totalRaw = u['total_tokens'];
    const total =
      totalRaw === undefined || totalRaw === null ? prompt + completion : this.count(totalRaw, raw);
    const details = (u['prompt_tokens_details'] ?? u['input_tokens_details']) as Json | null | undefined;
    let cached: number | null = null;
    if (details !== null && typeof details === 'object' && typeof details['cached_tokens'] === 'number') {
      cached = details['cached_tokens'];
    }
    return { promptTokens: prompt, completionTokens: completion, totalTokens: total, cachedTokens: cached };
  }

  private count(value: unknown, raw: string): number {
    if (value === undefined || value === null) return 0; // schema default
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
    throw this.fail('unexpected-shape', 'a usage count is not a non-negative number', raw);
  }

  /** The Responses API (`/v1/responses`) streams typed events instead of chunks. */
  private applyResponsesEvent(event: Json, type: string, raw: string): StreamStep {
    if (type === 'error') throw this.apiError(event, raw);
    const state = this.choice(0);
    let content = '';
    let tokens = 0;
    const outputIndex = typeof event['output_index'] === 'number' ? event['output_index'] : 0;
    switch (type) {
      case 'response.output_text.delta':
        content = this.text(event['delta'], 'delta', raw);
        state.content += content;
        tokens = Array.isArray(event['logprobs'])
          ? this.chatLogprobEntries(state, event['logprobs'], raw)
          : 0;
        if (tokens === 0 && content.length > 0) tokens = 1;
        break;
      case 'response.refusal.delta':
        state.refusal += this.text(event['delta'], 'delta', raw);
        break;
      case 'response.reasoning_text.delta':
      case 'response.reasoning_summary_text.delta':
        state.reasoningContent += this.text(event['delta'], 'delta', raw);
        break;
      case 'response.output_item.added': {
        const item = event['item'] as Json | null | undefined;
        if (item !== null && typeof item === 'object' && item['type'] === 'function_call') {
          this.mergeToolCall(
            state,
            {
              index: outputIndex,
              id: item['call_id'] ?? item['id'],
              function: { name: item['name'], arguments: item['arguments'] },
            },
            outputIndex,
            raw,
          );
        }
        break;
      }
      case 'response.function_call_arguments.delta':
        this.mergeToolCall(
          state,
          { index: outputIndex, function: { arguments: event['delta'] } },
          outputIndex,
          raw,
        );
        break;
      case 'response.created':
      case 'response.in_progress':
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        this.applyResponseObject(state, event['response'], type, raw);
        break;
      default:
        break; // other event types carry nothing this parser reports
    }
    state.tokens += tokens;
    this.tokens += tokens;
    return { done: false, contentDelta: content, tokens };
  }

  /** A whole (non-streamed) Responses API object: its output texts, then its end, as the events would say. */
  private applyResponseDocument(response: Json, raw: string): StreamStep {
    let contentDelta = '';
    let tokens = 0;
    const output = Array.isArray(response['output']) ? (response['output'] as unknown[]) : [];
    for (const item of output) {
      const content = (item as Json | null)?.['content'];
      if (!Array.isArray(content)) continue;
      for (const part of content as (Json | null)[]) {
        if (part?.['type'] !== 'output_text' || typeof part['text'] !== 'string') continue;
        const step = this.applyResponsesEvent(
          { type: 'response.output_text.delta', delta: part['text'] },
          'response.output_text.delta',
          raw,
        );
        contentDelta += step.contentDelta;
        tokens += step.tokens;
      }
    }
    const end = response['status'] === 'incomplete' ? 'response.incomplete' : 'response.completed';
    this.applyResponsesEvent({ type: end, response }, end, raw);
    return { done: false, contentDelta, tokens };
  }

  private applyResponseObject(state: ChoiceState, value: unknown, type: string, raw: string): void {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
    const response = value as Json;
    if (this.id === null && typeof response['id'] === 'string') this.id = response['id'];
    if (this.model === null && typeof response['model'] === 'string') this.model = response['model'];
    if (response['usage'] !== undefined && response['usage'] !== null)
      this.usage = this.parseUsage(response['usage'], raw);
    if (type === 'response.failed') throw this.apiError(response, raw);
    if (type === 'response.completed') {
      this.responseCompleted = true;
      state.finishReason = state.toolCalls.size > 0 ? 'tool_calls' : 'stop';
    } else if (type === 'response.incomplete') {
      this.responseCompleted = true;
      const details = response['incomplete_details'] as Json | null | undefined;
      const reason = details !== null && typeof details === 'object' ? details['reason'] : null;
      state.finishReason =
        reason === 'max_output_tokens' ? 'length' : typeof reason === 'string' ? reason : 'incomplete';
    }
  }

  private checkError(chunk: Json, raw: string): void {
    const error = chunk['error'];
    if (error !== undefined && error !== null) throw this.apiError(chunk, raw);
    if (chunk['object'] === 'error') throw this.apiError(chunk, raw);
  }

  private apiError(holder: Json, raw: string): StreamParseError {
    const inner = holder['error'];
    const e: Json =
      inner !== null && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Json) : holder;
    const message =
      typeof e['message'] === 'string'
        ? e['message']
        : typeof inner === 'string'
          ? inner
          : 'error object in stream';
    const type = typeof e['type'] === 'string' ? e['type'] : null;
    const code = typeof e['code'] === 'string' || typeof e['code'] === 'number' ? e['code'] : null;
    return new StreamParseError('api-error', message, excerpt(raw), this.events, { message, type, code });
  }

  private parseJson(data: string): unknown {
    try {
      return JSON.parse(data);
    } catch (error) {
      // Python's json.dumps writes NaN/Infinity/-Infinity by default; some servers leak them.
      if (/NaN|Infinity/.test(data)) {
        const repaired = replaceNonFiniteLiterals(data);
        if (repaired !== data) {
          try {
            return JSON.parse(repaired);
          } catch {
            // fall through to the original error
          }
        }
      }
      throw this.fail('malformed-json', error instanceof Error ? error.message : 'invalid JSON', data);
    }
  }

  private choice(index: number): ChoiceState {
    let state = this.choices.get(index);
    if (state === undefined) {
      state = {
        index,
        content: '',
        reasoningContent: '',
        refusal: '',
        tokens: 0,
        toolCalls: new Map(),
        finishReason: null,
        logprobs: [],
      };
      this.choices.set(index, state);
      if (index < this.lowestSeen) this.lowestSeen = index;
    }
    return state;
  }

  private fail(kind: 'malformed-json' | 'unexpected-shape', message: string, raw: string): StreamParseError {
    return new StreamParseError(kind, message, excerpt(raw), this.events);
  }
}

function maxKey(map: Map<number, unknown>): number {
  let max = -1;
  for (const key of map.keys()) max = Math.max(max, key);
  return max;
}

/** Rewrites bare NaN / Infinity / -Infinity outside strings as null / 1e308 / -9999. */
export function replaceNonFiniteLiterals(text: string): string {
  let out = '';
  let inString = false;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (inString) {
      out += ch;
      if (ch === '\\' && i + 1 < text.length) {
        out += text[i + 1];
        i += 2;
        continue;
      }
      if (ch === '"') inString = false;
      i++;
      continue;
    }
    if (ch === '"') {
      inString = true;
      out += ch;
      i++;
    } else if (text.startsWith('-Infinity', i)) {
      out += String(NEG_INF_LOGPROB);
      i += 9;
    } else if (text.startsWith('Infinity', i)) {
      out += '1e308';
      i += 8;
    } else if (text.startsWith('NaN', i)) {
      out += 'null';
      i += 3;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}
