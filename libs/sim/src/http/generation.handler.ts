import type { IncomingMessage, ServerResponse } from 'node:http';
import { Prng, mix32 } from '../text/prng.util';
import { tokenIds } from '../text/tokenizer.util';
import {
  planOutput,
  topLogprobs,
  type OutputOptions,
  type OutputPlan,
  type PlannedToken,
} from '../text/output.generator';
import type { SequenceTiming } from '../engine/serving.engine';
import { ApiError, BodyWriter, sendError, zodToApiError } from './http.util';
import {
  chatRequestSchema,
  completionRequestSchema,
  responsesRequestSchema,
  type ChatRequest,
} from './openai.schemas';
import { epochNowMs, type SimContext } from './sim.context';
import type { GroundTruthRecord } from './ground-truth.store';

type FinishReason = 'stop' | 'length' | 'tool_calls';

interface Usage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

/** Renders one endpoint's wire format (chat.completion.chunk or text_completion). */
interface Renderer {
  /** SSE JSON for token `index` (the first also opens the message). */
  tokenChunk(index: number): string;
  finishChunk(reason: FinishReason): string;
  usageChunk(usage: Usage): string;
  body(emitted: number, reason: FinishReason, usage: Usage): unknown;
  /** False: the stream ends without `data: [DONE]` (the Responses API sends none). */
  readonly doneMarker?: boolean;
}

function usageJson(u: Usage): string {
  return `{"prompt_tokens":${u.promptTokens},"completion_tokens":${u.completionTokens},"total_tokens":${u.promptTokens + u.completionTokens},"prompt_tokens_details":{"cached_tokens":${u.cachedTokens}},"completion_tokens_details":{"reasoning_tokens":0}}`;
}

function usageObject(u: Usage): unknown {
  return JSON.parse(usageJson(u));
}

const byteCache = new Map<string, string>();
/** `bytes` array of a token's UTF-8 encoding, as JSON. */
function bytesJson(text: string): string {
  let cached = byteCache.get(text);
  if (cached === undefined) {
    cached = JSON.stringify([...Buffer.from(text, 'utf8')]);
    if (byteCache.size < 10000) byteCache.set(text, cached);
  }
  return cached;
}

function logprobEntry(token: PlannedToken, top: number): string {
  let alternatives = '';
  if (top > 0) {
    alternatives = topLogprobs(token, top)
      .map((t) => `{"token":${JSON.stringify(t.token)},"logprob":${t.logprob},"bytes":${bytesJson(t.token)}}`)
      .join(',');
  }
  return `{"token":${JSON.stringify(token.text)},"logprob":${token.logprob},"bytes":${bytesJson(token.text)},"top_logprobs":[${alternatives}]}`;
}

class ChatRenderer implements Renderer {
  private readonly head: string;

  constructor(
    private readonly id: string,
    private readonly created: number,
    private readonly model: string,
    private readonly plan: OutputPlan,
    private readonly logprobs: boolean,
    private readonly top: number,
  ) {
    this.head = `{"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"system_fingerprint":"fp_fathom_sim","choices":[`;
  }

  tokenChunk(index: number): string {
    const token = this.plan.tokens[index];
    const call = this.plan.toolCall;
    if (this.plan.refusal) {
      // OpenAI's refusal stream: content held at null, the text in `delta.refusal` fragments
      // (and their logprobs under `logprobs.refusal`).
      let out = '';
      if (index === 0) {
        const lp = this.logprobs ? '{"content":null,"refusal":[]}' : 'null';
        out = `${this.head}{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"logprobs":${lp},"finish_reason":null}]}\n\ndata: `;
      }
      const lp = this.logprobs ? `{"content":null,"refusal":[${logprobEntry(token, this.top)}]}` : 'null';
      return (
        out +
        `${this.head}{"index":0,"delta":{"refusal":${JSON.stringify(token.text)}},"logprobs":${lp},"finish_reason":null}]}`
      );
    }
    if (call !== null) {
      // Fixture c6aa7e397b71: header delta with id/name/empty arguments, then argument fragments.
      let out = '';
      if (index === 0) {
        out = `${this.head}{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"${call.id}","type":"function","function":{"name":${JSON.stringify(call.name)},"arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}]}\n\ndata: `;
      }
      return (
        out +
        `${this.head}{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":${JSON.stringify(token.text)}}}]},"logprobs":null,"finish_reason":null}]}`
      );
    }
    let out = '';
    if (index === 0) {
      // Fixture 83b060bae42e: the first chunk has role + empty content (+ empty logprobs).
      const lp = this.logprobs ? '{"content":[],"refusal":null}' : 'null';
      out = `${this.head}{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":${lp},"finish_reason":null}]}\n\ndata: `;
    }
    const lp = this.logprobs ? `{"content":[${logprobEntry(token, this.top)}],"refusal":null}` : 'null';
    return (
      out +
      `${this.head}{"index":0,"delta":{"content":${JSON.stringify(token.text)}},"logprobs":${lp},"finish_reason":null}]}`
    );
  }

  finishChunk(reason: FinishReason): string {
    return `${this.head}{"index":0,"delta":{},"logprobs":null,"finish_reason":"${reason}"}]}`;
  }

  usageChunk(usage: Usage): string {
    return `${this.head}],"usage":${usageJson(usage)}}`;
  }

  body(emitted: number, reason: FinishReason, usage: Usage): unknown {
    const tokens = this.plan.tokens.slice(0, emitted);
    const call = this.plan.toolCall;
    const text = tokens.map((t) => t.text).join('');
    const message = this.plan.refusal
      ? { role: 'assistant', content: null, refusal: text, annotations: [] }
      : call !== null
        ? {
            role: 'assistant',
            content: null,
            refusal: null,
            annotations: [],
            tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: text } }],
          }
        : { role: 'assistant', content: text, refusal: null, annotations: [] };
    const entries = () => tokens.map((t) => JSON.parse(logprobEntry(t, this.top)) as unknown);
    const logprobs = !this.logprobs
      ? null
      : this.plan.refusal
        ? { content: null, refusal: entries() }
        : call === null
          ? { content: entries(), refusal: null }
          : null;
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      system_fingerprint: 'fp_fathom_sim',
      choices: [{ index: 0, message, logprobs, finish_reason: reason }],
      usage: usageObject(usage),
    };
  }
}

/**
 * The Responses API stream: `response.created`, `response.output_item.added`, a
 * `response.output_text.delta` per token, `response.output_text.done`, then `response.completed`
 * (or `response.incomplete` at max_output_tokens) with the usage; each payload names its `type`
 * (the `event:` line is left out: readers key on the payload's type).
 */
class ResponsesRenderer implements Renderer {
  readonly doneMarker = false;
  private reason: FinishReason = 'stop';
  private readonly itemId: string;

  constructor(
    private readonly id: string,
    private readonly created: number,
    private readonly model: string,
    private readonly plan: OutputPlan,
  ) {
    this.itemId = `msg_${id}`;
  }

  private response(status: string, extra = ''): string {
    return `{"id":"${this.id}","object":"response","created_at":${this.created},"status":"${status}","model":${JSON.stringify(this.model)},"output":[]${extra}}`;
  }

  tokenChunk(index: number): string {
    let out = '';
    if (index === 0) {
      out =
        `{"type":"response.created","sequence_number":0,"response":${this.response('in_progress')}}\n\ndata: ` +
        `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"${this.itemId}","type":"message","status":"in_progress","role":"assistant","content":[]}}\n\ndata: `;
    }
    return (
      out +
      `{"type":"response.output_text.delta","sequence_number":${index + 2},"item_id":"${this.itemId}","output_index":0,"content_index":0,"delta":${JSON.stringify(this.plan.tokens[index].text)}}`
    );
  }

  finishChunk(reason: FinishReason): string {
    this.reason = reason;
    const text = this.plan.tokens.map((t) => t.text).join('');
    return `{"type":"response.output_text.done","item_id":"${this.itemId}","output_index":0,"content_index":0,"text":${JSON.stringify(text)}}`;
  }

  private usageText(u: Usage): string {
    return `{"input_tokens":${u.promptTokens},"input_tokens_details":{"cached_tokens":${u.cachedTokens}},"output_tokens":${u.completionTokens},"output_tokens_details":{"reasoning_tokens":0},"total_tokens":${u.promptTokens + u.completionTokens}}`;
  }

  usageChunk(usage: Usage): string {
    const incomplete = this.reason === 'length';
    const details = incomplete ? ',"incomplete_details":{"reason":"max_output_tokens"}' : '';
    const status = incomplete ? 'incomplete' : 'completed';
    return `{"type":"response.${status}","response":${this.response(status, `${details},"usage":${this.usageText(usage)}`)}}`;
  }

  body(emitted: number, reason: FinishReason, usage: Usage): unknown {
    const text = this.plan.tokens
      .slice(0, emitted)
      .map((t) => t.text)
      .join('');
    return {
      id: this.id,
      object: 'response',
      created_at: this.created,
      status: reason === 'length' ? 'incomplete' : 'completed',
      ...(reason === 'length' ? { incomplete_details: { reason: 'max_output_tokens' } } : {}),
      model: this.model,
      output: [
        {
          id: this.itemId,
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text, annotations: [] }],
        },
      ],
      usage: JSON.parse(this.usageText(usage)),
    };
  }
}

class CompletionRenderer implements Renderer {
  private readonly head: string;

  constructor(
    private readonly id: string,
    private readonly created: number,
    private readonly model: string,
    private readonly plan: OutputPlan,
    private readonly logprobs: number | null,
  ) {
    this.head = `{"id":"${id}","object":"text_completion","created":${created},"model":${JSON.stringify(model)},"system_fingerprint":"fp_fathom_sim","choices":[`;
  }

  private legacyLogprobs(tokens: PlannedToken[], offset: number): unknown {
    if (this.logprobs === null) return null;
    const textOffset: number[] = [];
    let at = offset;
    for (const t of tokens) {
      textOffset.push(at);
      at += t.text.length;
    }
    return {
      tokens: tokens.map((t) => t.text),
      token_logprobs: tokens.map((t) => t.logprob),
      top_logprobs: tokens.map((t) =>
        Object.fromEntries(topLogprobs(t, this.logprobs ?? 0).map((a) => [a.token, a.logprob])),
      ),
      text_offset: textOffset,
    };
  }

  tokenChunk(index: number): string {
    const token = this.plan.tokens[index];
    let offset = 0;
    if (this.logprobs !== null) for (let i = 0; i < index; i++) offset += this.plan.tokens[i].text.length;
    return `${this.head}{"index":0,"text":${JSON.stringify(token.text)},"logprobs":${JSON.stringify(this.legacyLogprobs([token], offset))},"finish_reason":null}]}`;
  }

  finishChunk(reason: FinishReason): string {
    return `${this.head}{"index":0,"text":"","logprobs":null,"finish_reason":"${reason}"}]}`;
  }

  usageChunk(usage: Usage): string {
    return `${this.head}],"usage":${usageJson(usage)}}`;
  }

  body(emitted: number, reason: FinishReason, usage: Usage): unknown {
    const tokens = this.plan.tokens.slice(0, emitted);
    return {
      id: this.id,
      object: 'text_completion',
      created: this.created,
      model: this.model,
      system_fingerprint: 'fp_fathom_sim',
      choices: [
        {
          index: 0,
          text: tokens.map((t) => t.text).join(''),
          logprobs: this.legacyLogprobs(tokens, 0),
          finish_reason: reason,
        },
      ],
      usage: usageObject(usage),
    };
  }
}

function messageText(content: ChatRequest['messages'][number]['content']): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => part.text ?? '').join('');
}

/** Which tool (if any) the simulated model calls: a named one, the first when required, or the
 * first under `auto` when the last turn is the user's (after a tool result it answers in text). */
function chooseTool(request: ChatRequest): { name: string; parameters: unknown } | null {
  const tools = request.tools ?? [];
  if (tools.length === 0 || request.tool_choice === 'none') return null;
  const choice = request.tool_choice;
  if (choice !== null && typeof choice === 'object') {
    const named = tools.find((t) => t.function.name === choice.function.name);
    if (!named)
      throw new ApiError(
        400,
        `Tool choice '${choice.function.name}' is not one of the provided tools.`,
        'invalid_request_error',
        'tool_choice',
      );
    return { name: named.function.name, parameters: named.function.parameters };
  }
  const last = request.messages[request.messages.length - 1];
  if (choice === 'required' || last.role === 'user')
    return { name: tools[0].function.name, parameters: tools[0].function.parameters };
  return null;
}

/** The tool_call_drift fault's mode when it applies to `tool`, else null. */
function argumentDriftFor(ctx: SimContext, tool: { name: string } | null): OutputOptions['argumentDrift'] {
  const drift = ctx.faults.get('tool_call_drift');
  if (!tool || drift === undefined || (drift.tool !== undefined && drift.tool !== tool.name)) return null;
  return drift.mode;
}

function checkModel(ctx: SimContext, model: string): void {
  if (model !== ctx.config.model) {
    throw new ApiError(
      404,
      `The model \`${model}\` does not exist or you do not have access to it.`,
      'invalid_request_error',
      'model',
      'model_not_found',
    );
  }
}

/**
 * Requests fail at once while the http_5xx fault is on (with probability `rate`), drawn per request
 * number and the target's seed: without the seed every seed failed the same requests (at 1 %, the
 * first at request 214, past what a 10 s run sends).
 */
export function injectedServerError(ctx: SimContext, requestNumber: number): ApiError | null {
  const fault = ctx.faults.get('http_5xx');
  if (fault === undefined || new Prng(mix32(requestNumber, ctx.config.seed)).next() >= fault.rate)
    return null;
  if (fault.status === 500)
    return new ApiError(
      500,
      'The server had an error while processing your request. Sorry about that!',
      'server_error',
    );
  if (fault.status === 502) return new ApiError(502, 'Bad gateway.', 'server_error');
  return new ApiError(
    503,
    'The engine is currently overloaded, please try again later.',
    'server_error',
    null,
    'overloaded',
  );
}

/**
 * Completion requests are refused with 429 while the rate_limit fault is on (with probability
 * `rate`), drawn per request number and the target's seed (apart from the 5xx draw).
 */
export function injectedRateLimit(ctx: SimContext, requestNumber: number): ApiError | null {
  const fault = ctx.faults.get('rate_limit');
  if (fault === undefined || new Prng(mix32(requestNumber, ctx.config.seed ^ 0x429)).next() >= fault.rate)
    return null;
  return new ApiError(
    429,
    `Rate limit reached for requests. Please try again in ${fault.retryAfterS}s.`,
    'requests',
    null,
    'rate_limit_exceeded',
    { 'retry-after': String(fault.retryAfterS) },
  );
}

/**
 * Whether a chat completion declines while the refusal_rate fault is on (with probability
 * `rate`), drawn per request number and the target's seed (apart from the 5xx and 429 draws).
 */
export function injectedRefusal(ctx: SimContext, requestNumber: number): boolean {
  const fault = ctx.faults.get('refusal_rate');
  return (
    fault !== undefined && new Prng(mix32(requestNumber, ctx.config.seed ^ 0x7ef05a1)).next() < fault.rate
  );
}

interface GenerationSpec {
  endpoint: string;
  model: string;
  stream: boolean;
  includeUsage: boolean;
  promptText: string;
  promptIds: Uint32Array;
  maxTokens: number | null;
  ignoreEos: boolean;
  requestSeed: number | null;
  tool: { name: string; parameters: unknown } | null;
  /** The endpoint can answer with a refusal (chat completions): the refusal_rate fault applies. */
  refusable: boolean;
  makeRenderer(id: string, created: number, plan: OutputPlan): Renderer;
  idPrefix: string;
}

export async function handleChat(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const parsed = chatRequestSchema.safeParse(body);
  if (!parsed.success) throw zodToApiError(parsed.error);
  const request = parsed.data;
  checkModel(ctx, request.model);
  if ((request.n ?? 1) > 1)
    throw new ApiError(
      400,
      'fathom-sim supports only n=1.',
      'invalid_request_error',
      'n',
      'unsupported_value',
    );
  if (request.top_logprobs && !request.logprobs) {
    throw new ApiError(
      400,
      "Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.",
      'invalid_request_error',
      'top_logprobs',
    );
  }
  const tool = chooseTool(request);
  const promptText =
    request.messages.map((m) => `<|${m.role}|>${messageText(m.content)}`).join('') +
    (request.tools ? JSON.stringify(request.tools) : '');
  const logprobs = request.logprobs === true;
  const top = request.top_logprobs ?? 0;
  await generate(ctx, req, res, {
    endpoint: '/v1/chat/completions',
    model: request.model,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    promptText,
    promptIds: tokenIds(promptText),
    maxTokens: request.max_completion_tokens ?? request.max_tokens ?? null,
    ignoreEos: request.ignore_eos === true,
    requestSeed: request.seed ?? null,
    tool,
    refusable: true,
    idPrefix: 'chatcmpl-',
    makeRenderer: (id, created, plan) => new ChatRenderer(id, created, request.model, plan, logprobs, top),
  });
}

/** `POST /v1/responses`: the same engine in the Responses API's wire format (usage always sent). */
export async function handleResponses(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const parsed = responsesRequestSchema.safeParse(body);
  if (!parsed.success) throw zodToApiError(parsed.error);
  const request = parsed.data;
  checkModel(ctx, request.model);
  const turns =
    typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
  const promptText =
    (request.instructions ? `<|system|>${request.instructions}` : '') +
    turns
      .map(
        (m) =>
          `<|${m.role}|>${typeof m.content === 'string' ? m.content : m.content.map((p) => p.text ?? '').join('')}`,
      )
      .join('');
  await generate(ctx, req, res, {
    endpoint: '/v1/responses',
    model: request.model,
    stream: request.stream === true,
    includeUsage: true,
    promptText,
    promptIds: tokenIds(promptText),
    maxTokens: request.max_output_tokens ?? null,
    ignoreEos: false,
    requestSeed: request.seed ?? null,
    tool: null,
    refusable: false,
    idPrefix: 'resp_',
    makeRenderer: (id, created, plan) => new ResponsesRenderer(id, created, request.model, plan),
  });
}

export async function handleCompletion(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const parsed = completionRequestSchema.safeParse(body);
  if (!parsed.success) throw zodToApiError(parsed.error);
  const request = parsed.data;
  checkModel(ctx, request.model);
  if ((request.n ?? 1) > 1)
    throw new ApiError(
      400,
      'fathom-sim supports only n=1.',
      'invalid_request_error',
      'n',
      'unsupported_value',
    );
  const prompt = request.prompt;
  let promptText: string;
  let promptIds: Uint32Array;
  if (typeof prompt === 'string') {
    promptText = prompt;
    promptIds = tokenIds(prompt);
  } else if (typeof prompt[0] === 'string') {
    promptText = prompt[0] as string;
    promptIds = tokenIds(promptText);
  } else {
    promptIds = Uint32Array.from(prompt as number[]);
    promptText = (prompt as number[]).join(' ');
  }
  await generate(ctx, req, res, {
    endpoint: '/v1/completions',
    model: request.model,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    promptText,
    promptIds,
    maxTokens: request.max_tokens ?? 16,
    ignoreEos: request.ignore_eos === true,
    requestSeed: request.seed ?? null,
    tool: null,
    refusable: false,
    idPrefix: 'cmpl-',
    makeRenderer: (id, created, plan) =>
      new CompletionRenderer(id, created, request.model, plan, request.logprobs ?? null),
  });
}

function generate(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  spec: GenerationSpec,
): Promise<void> {
  const number = ctx.nextRequestNumber();
  const simId = `sim-${number.toString(36).padStart(6, '0')}`;
  const headers = { 'x-sim-request-id': simId };
  const injected = injectedServerError(ctx, number) ?? injectedRateLimit(ctx, number);
  const fathomHeader = req.headers['x-fathom-request'];
  const traceparent = req.headers.traceparent;
  const arrivalEpochMs = epochNowMs();
  const out = ctx.config.output;
  const natural = out.defaultTokens;
  const maxTokens = spec.maxTokens;
  const hallucinationFault = ctx.faults.get('hallucination_rate');
  const refused = spec.refusable && injectedRefusal(ctx, number);
  // A refusing model calls no tool: the refusal answers instead.
  const tool = refused ? null : spec.tool;
  const plan = planOutput({
    seed: ctx.config.seed ^ (spec.requestSeed ?? 0),
    promptText: spec.promptText,
    tokens: spec.ignoreEos && maxTokens !== null ? maxTokens : Math.min(natural, maxTokens ?? natural),
    hallucinationRate: hallucinationFault?.rate ?? out.hallucinationRate,
    groundedEntropyBits: out.groundedEntropyBits,
    groundedEntropySd: out.groundedEntropySd,
    hallucinatedEntropyBits: out.hallucinatedEntropyBits,
    hallucinatedEntropySd: out.hallucinatedEntropySd,
    tool,
    argumentDrift: argumentDriftFor(ctx, tool),
    refusal: refused,
  });
  let finishReason: FinishReason = tool ? 'tool_calls' : 'stop';
  if (maxTokens !== null && plan.tokens.length > maxTokens) {
    plan.tokens.length = maxTokens;
    finishReason = 'length';
  } else if (!tool && !refused && maxTokens !== null && maxTokens < natural) {
    // A refusal is whole in its own few tokens: it ends with `stop` under any larger limit.
    finishReason = 'length';
  } else if (!tool && !refused && spec.ignoreEos && maxTokens !== null) {
    finishReason = 'length';
  }
  const promptTokens = spec.promptIds.length;
  const limit = ctx.engine.maxTokensPerSequence();
  if (promptTokens + plan.tokens.length > limit) {
    return Promise.reject(
      new ApiError(
        400,
        `This model's maximum context length is ${limit} tokens. However, you requested ${promptTokens + plan.tokens.length} tokens (${promptTokens} in the messages, ${plan.tokens.length} in the completion). Please reduce the length of the messages or completion.`,
        'invalid_request_error',
        'messages',
        'context_length_exceeded',
      ),
    );
  }

  const record: GroundTruthRecord = {
    id: simId,
    fathomRequestId: typeof fathomHeader === 'string' ? fathomHeader : null,
    traceparent: typeof traceparent === 'string' ? traceparent.slice(0, 128) : null,
    endpoint: spec.endpoint,
    model: spec.model,
    stream: spec.stream,
    status: 'queued',
    arrivalEpochMs,
    promptTokens,
    cachedPromptTokens: 0,
    completionTokens: 0,
    finishReason: null,
    timing: { queueMs: null, prefillMs: null, decodeMs: null, ttftMs: null, e2eMs: null },
    preemptions: 0,
    tokenEmitEpochMs: [],
    refused,
    hallucinatedSpans: plan.hallucinatedSpans,
    tokenEntropyBits: plan.tokens.map((t) => t.entropyBits),
    faults: ctx.faults.list().map((f) => f.spec.kind),
  };
  ctx.groundTruth.put(record);
  if (injected !== null) {
    record.status = 'failed';
    sendError(res, injected, headers);
    return Promise.resolve();
  }

  const created = Math.floor(Date.now() / 1000);
  const renderer = spec.makeRenderer(`${spec.idPrefix}${simId}`, created, plan);
  const slowLoris = ctx.faults.get('slow_loris');
  const writer = new BodyWriter(res, slowLoris?.bytesPerSecond ?? null);
  const stall = spec.stream ? ctx.faults.get('stream_stall') : undefined;
  const truncate = spec.stream ? ctx.faults.get('stream_truncate') : undefined;
  const malformed = spec.stream ? ctx.faults.get('malformed_sse') : undefined;
  const malformedRng = new Prng(number ^ 0x5bd1e995);
  const scale = ctx.config.timeScale === 0 ? 1 : ctx.config.timeScale;

  if (spec.stream) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...headers,
    });
    res.flushHeaders();
  }

  return new Promise<void>((resolve) => {
    let emitted = 0;
    let written = 0;
    let stalledUntil = 0;
    let pending: number[] = [];
    let finished = false;
    let finishTiming: SequenceTiming | null = null;

    const writeEvent = (json: string): void => {
      if (malformed !== undefined && malformedRng.next() < malformed.rate) {
        // A torn event: JSON cut mid-object, as a buggy proxy or a crashed worker leaves it.
        writer.write(`data: ${json.slice(0, Math.max(1, Math.floor(json.length / 2)))}\n\n`);
      }
      writer.write(`data: ${json}\n\n`);
    };

    const complete = (): void => {
      if (finished) return;
      finished = true;
      const timing = finishTiming;
      const usage: Usage = {
        promptTokens,
        completionTokens: written || emitted,
        cachedTokens: record.cachedPromptTokens,
      };
      if (spec.stream) {
        writeEvent(renderer.finishChunk(finishReason));
        if (spec.includeUsage) writeEvent(renderer.usageChunk(usage));
        if (renderer.doneMarker !== false) writer.write('data: [DONE]\n\n');
        writer.end();
      } else {
        const text = JSON.stringify(renderer.body(emitted, finishReason, usage));
        res.writeHead(200, { 'content-type': 'application/json', ...headers });
        writer.write(text);
        writer.end();
      }
      record.status = 'finished';
      record.finishReason = finishReason;
      if (timing !== null) recordMetrics(timing);
      resolve();
    };

    const recordMetrics = (timing: SequenceTiming): void => {
      const gaps: number[] = [];
      for (let i = 1; i < record.tokenEmitEpochMs.length; i++)
        gaps.push((record.tokenEmitEpochMs[i] - record.tokenEmitEpochMs[i - 1]) / 1000);
      ctx.metrics.recordFinished({
        finishReason,
        promptTokens,
        generationTokens: record.completionTokens,
        ttftS: record.timing.ttftMs === null ? null : record.timing.ttftMs / 1000,
        queueS: record.timing.queueMs === null ? null : record.timing.queueMs / 1000,
        prefillS: record.timing.prefillMs === null ? null : record.timing.prefillMs / 1000,
        decodeS: record.timing.decodeMs === null ? null : record.timing.decodeMs / 1000,
        e2eS: ((timing.finishMs - timing.arrivalMs) * scale) / 1000,
        interTokenS: gaps,
      });
    };

    const writeToken = (index: number): void => {
      if (truncate !== undefined && written >= truncate.afterTokens) {
        if (!finished) {
          finished = true;
          record.status = 'truncated';
          handle.abort();
          writer.destroy();
          resolve();
        }
        return;
      }
      writeEvent(renderer.tokenChunk(index));
      record.tokenEmitEpochMs[index] = epochNowMs();
      written++;
      if (stall !== undefined && written === stall.afterTokens && stall.stallMs > 0) {
        stalledUntil = epochNowMs() + stall.stallMs;
        setTimeout(flushPending, stall.stallMs);
      }
    };

    const flushPending = (): void => {
      stalledUntil = 0;
      const queued = pending;
      pending = [];
      for (const index of queued) writeToken(index);
      if (finishTiming !== null && pending.length === 0) complete();
    };

    const handle = ctx.engine.submit({
      promptIds: spec.promptIds,
      outputTokens: plan.tokens.length,
      onToken: (index) => {
        emitted = index + 1;
        record.completionTokens = emitted;
        record.status = 'running';
        if (!spec.stream) {
          record.tokenEmitEpochMs[index] = epochNowMs();
          return;
        }
        if (finished) return;
        if (stalledUntil > 0) pending.push(index);
        else writeToken(index);
      },
      onFinish: (timing) => {
        finishTiming = timing;
        record.cachedPromptTokens = timing.cachedPromptTokens;
        record.preemptions = timing.preemptions;
        const t = record.timing;
        if (timing.firstScheduledMs !== null)
          t.queueMs = (timing.firstScheduledMs - timing.arrivalMs) * scale;
        if (timing.firstTokenMs !== null && timing.firstScheduledMs !== null)
          t.prefillMs = (timing.firstTokenMs - timing.firstScheduledMs) * scale;
        if (timing.firstTokenMs !== null) {
          t.ttftMs = (timing.firstTokenMs - timing.arrivalMs) * scale;
          t.decodeMs = (timing.finishMs - timing.firstTokenMs) * scale;
        }
        t.e2eMs = (timing.finishMs - timing.arrivalMs) * scale;
        if (timing.aborted) {
          if (!finished) {
            finished = true;
            if (record.status !== 'truncated') record.status = 'aborted';
            if (!res.headersSent)
              sendError(
                res,
                new ApiError(
                  503,
                  'The request was aborted by the engine (KV cache too small).',
                  'server_error',
                ),
                headers,
              );
            else writer.destroy();
            resolve();
          }
          return;
        }
        if (stalledUntil === 0) complete();
      },
    });

    res.on('close', () => {
      if (!finished) {
        finished = true;
        record.status = 'aborted';
        handle.abort();
        resolve();
      }
    });
  });
}
