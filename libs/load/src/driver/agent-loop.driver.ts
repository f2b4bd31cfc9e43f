import { Pool, request as httpRequest } from 'undici';
import type { AgentLoopScenario, AgentTool, ErrorClass, RequestRecord } from '@fathom/contracts';
import { ChatStreamAssembler, SseDecoder, type ParsedChatStream } from '@fathom/semantic';
import { classifyError, errorText, httpErrorClass, noEventStreamMessage } from './error-class.util';
import { readBodyText } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import { countOutputTokens } from './output-token-count.util';
import type { DriverOutcome, DriverRequest, RequestDriver } from './request-outcome';
import { targetPath } from './target-url.util';

/** A tool result fed back to the model is cut to this many characters. */
const TOOL_RESULT_CAP = 16 * 1024;
/** Error bodies kept for the record's errorMessage. */
const ERROR_BODY_CAP = 2048;

type AgentLoopFigures = NonNullable<RequestRecord['agentLoop']>;
type WireMessage = Record<string, unknown>;

interface TurnResult {
  parsed: ParsedChatStream | null;
  ttftMs: number | null;
  status: number;
  errorClass: ErrorClass | null;
  errorMessage?: string;
}

/**
 * The tool-calling agent loop (scenario `agent-loop`) against an OpenAI-compatible
 * `/chat/completions`, streamed: turn 1 sends the task with the declared tools; while the model
 * answers with tool calls (and turns remain), Fathom runs each call (the campaign's mock answer,
 * or a POST of the arguments to the tool's URL), appends the assistant turn and the tool results,
 * and sends the next turn. The record's TTFT is the first turn's, its chunk offsets the last
 * turn's content (from the iteration's start), `agentLoop` the per-turn figures. A transport or
 * HTTP failure of a turn fails the iteration; a tool failure is fed back as an error result
 * (the model decides), and `maxTurns` without a final answer is `finished: false`.
 */
export class AgentLoopDriver implements RequestDriver {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;
  private readonly tools: WireMessage[];
  private readonly byName: Map<string, AgentTool>;

  constructor(
    private readonly scenario: AgentLoopScenario,
    target: HttpTarget,
    private readonly options: DriverOptions,
  ) {
    const { origin, path } = targetPath(target.baseUrl, '/chat/completions');
    this.path = path;
    this.pool = new Pool(origin, {
      connections: options.connections,
      pipelining: 1,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.headers = {
      'content-type': 'application/json',
      ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
    };
    this.tools = scenario.tools.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.parameters,
      },
    }));
    this.byName = new Map(scenario.tools.map((t) => [t.name, t]));
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const base = { inputTokensClient: request.item.inputTokensClient, usage: null };
    if (!request.gate(this.path))
      return {
        ...base,
        status: 0,
        e2eMs: 0,
        ttftMs: null,
        chunkOffsetsMs: [],
        errorClass: null,
        outputTokensClient: 0,
        content: '',
        finishReason: null,
        gated: true,
      };
    // The task (and system prompt) as the prompt source built it: counted in the scenario's tokenizer.
    const messages: WireMessage[] = request.item.messages.map((m) => ({ role: m.role, content: m.content }));
    const figures: AgentLoopFigures = { turns: 0, finished: false, loops: 0, turnTtftMs: [], toolCalls: [] };
    const seen = new Set<string>();
    let firstTtft: number | null = null;
    let last: TurnResult | null = null;
    let lastOffsets: number[] = [];
    let promptTokens = 0;
    let completionTokens = 0;
    let anyUsage = false;
    for (let turn = 0; turn < this.scenario.maxTurns; turn++) {
      const offsets: number[] = [];
      const turnStart = performance.now();
      last = await this.turn(messages, request, offsets);
      figures.turns++;
      figures.turnTtftMs.push(last.ttftMs);
      if (turn === 0 && last.ttftMs !== null) firstTtft = turnStart - request.startMono + last.ttftMs;
      lastOffsets = offsets;
      if (last.errorClass !== null || last.parsed === null) break;
      if (last.parsed.usage) {
        anyUsage = true;
        promptTokens += last.parsed.usage.promptTokens;
        completionTokens += last.parsed.usage.completionTokens;
      }
      const calls = last.parsed.toolCalls;
      if (calls.length === 0) {
        figures.finished = true;
        break;
      }
      messages.push({
        role: 'assistant',
        content: last.parsed.content || null,
        tool_calls: calls.map((c, i) => ({
          id: c.id ?? `call_${turn}_${i}`,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      });
      for (const [i, call] of calls.entries()) {
        const key = `${call.name}\u0000${call.arguments}`;
        if (seen.has(key)) figures.loops++;
        seen.add(key);
        const started = performance.now();
        const result = await this.runTool(call.name, call.arguments, request);
        if (figures.toolCalls.length < 256)
          figures.toolCalls.push({ tool: call.name, latencyMs: performance.now() - started, ok: result.ok });
        messages.push({
          role: 'tool',
          tool_call_id: call.id ?? `call_${turn}_${i}`,
          content: result.content,
        });
      }
    }
    const e2eMs = performance.now() - request.startMono;
    const parsed = last?.parsed ?? null;
    const content = parsed?.content ?? '';
    return {
      status: last?.status ?? 0,
      e2eMs,
      ttftMs: firstTtft,
      chunkOffsetsMs: lastOffsets,
      errorClass: last === null ? 'other' : last.errorClass,
      ...(last?.errorMessage ? { errorMessage: last.errorMessage } : {}),
      inputTokensClient: request.item.inputTokensClient,
      outputTokensClient: countOutputTokens(content, this.options.countTokens),
      usage: anyUsage ? { promptTokens, completionTokens, cachedTokens: null } : null,
      content: content.slice(0, this.options.contentCapChars),
      finishReason: parsed?.finishReason ?? null,
      agentLoop: figures,
    };
  }

  /** One streamed turn; `offsets` get each content payload's time from the iteration's start. */
  private async turn(
    messages: WireMessage[],
    request: DriverRequest,
    offsets: number[],
  ): Promise<TurnResult> {
    const sent = performance.now();
    let headersReceived = false;
    try {
      const response = await this.pool.request({
        path: this.path,
        method: 'POST',
        headers: { ...this.headers, ...request.headers },
        body: JSON.stringify({
          model: this.scenario.model,
          messages,
          tools: this.tools,
          max_tokens: this.scenario.maxTokens,
          stream: true,
          stream_options: { include_usage: true },
          ...(this.scenario.temperature === undefined ? {} : { temperature: this.scenario.temperature }),
        }),
        signal: request.cancel.signal(),
      });
      const status = response.statusCode;
      headersReceived = true;
      if (status < 200 || status >= 300) {
        const body = await readBodyText(response.body, ERROR_BODY_CAP);
        return { parsed: null, ttftMs: null, status, errorClass: httpErrorClass(status), errorMessage: body };
      }
      const decoder = new SseDecoder();
      const assembler = new ChatStreamAssembler();
      let ttftMs: number | null = null;
      const onPayload = (data: string) => {
        const step = assembler.accept(data);
        const now = performance.now();
        if (step.contentDelta !== '') offsets.push(now - request.startMono);
        if (ttftMs === null && (step.contentDelta !== '' || data.includes('"tool_calls"')))
          ttftMs = now - sent;
      };
      let received = 0;
      for await (const chunk of response.body) {
        received += (chunk as Buffer).length;
        for (const data of decoder.push((chunk as Buffer).toString('utf8'))) onPayload(data);
      }
      for (const data of decoder.end()) onPayload(data);
      const parsed = assembler.result();
      // Bytes but not one event: not an event stream at all (as the chat driver classes it).
      if (parsed.termination === 'empty' && received > 0)
        return {
          parsed,
          ttftMs,
          status,
          errorClass: 'malformed-sse',
          errorMessage: `turn: ${noEventStreamMessage(status, received)}`,
        };
      if (parsed.termination === 'truncated' || parsed.termination === 'empty')
        return {
          parsed,
          ttftMs,
          status,
          errorClass: 'stream-truncated',
          errorMessage: `turn stream ${parsed.termination}`,
        };
      return { parsed, ttftMs, status, errorClass: null };
    } catch (error) {
      return {
        parsed: null,
        ttftMs: null,
        status: 0,
        errorClass: classifyError(error, request.cancel, headersReceived),
        errorMessage: errorText(error),
      };
    }
  }

  /** Runs one tool call; a failure is a result the model reads (`{"error": ...}`), never a throw. */
  private async runTool(
    name: string,
    args: string,
    request: DriverRequest,
  ): Promise<{ ok: boolean; content: string }> {
    const tool = this.byName.get(name);
    if (!tool) return { ok: false, content: JSON.stringify({ error: `unknown tool ${name}` }) };
    if (tool.mock) {
      if (tool.mock.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, tool.mock!.latencyMs));
      return { ok: true, content: JSON.stringify(tool.mock.answer ?? null).slice(0, TOOL_RESULT_CAP) };
    }
    const http = tool.http!;
    try {
      const response = await httpRequest(http.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...request.headers },
        body: args === '' ? '{}' : args,
        signal: AbortSignal.any([request.cancel.signal(), AbortSignal.timeout(http.timeoutMs)]),
      });
      const text = await readBodyText(response.body, TOOL_RESULT_CAP);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      return {
        ok,
        content: ok ? text : JSON.stringify({ error: `HTTP ${response.statusCode}`, body: text }),
      };
    } catch (error) {
      return { ok: false, content: JSON.stringify({ error: errorText(error) }) };
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
