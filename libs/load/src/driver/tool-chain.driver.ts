import { Pool } from 'undici';
import {
  headerTexts,
  type ErrorClass,
  type ToolCallObservation,
  type ToolChainScenario,
} from '@fathom/contracts';
import { ChatStreamAssembler } from '@fathom/semantic';
import { countOutputTokens } from './output-token-count.util';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBody } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import type { DriverOutcome, DriverRequest, RequestDriver } from './request-outcome';
import { targetPath } from './target-url.util';
import {
  breaksContract,
  observeToolCall,
  pushToolCall,
  toolObserverOf,
  unansweredToolCall,
  type ToolObserver,
} from './tool-observation.util';

const BODY_CAP = 1024 * 1024;
/** Main path of a tool call when a fallback is declared without a timeout (spec: 800 ms). */
const DEFAULT_MAIN_TIMEOUT_MS = 800;
/** The fallback waits this much longer than the main path (spec: 200 ms above its 800 ms). */
const FALLBACK_EXTRA_MS = 200;

type ToolSpec = ToolChainScenario['tools'][number];
interface PlannedTool {
  spec: ToolSpec;
  observer: ToolObserver;
}
type ToolAnswer =
  | {
      kind: 'answer';
      status: number;
      headers: Record<string, string | string[] | undefined>;
      text: string;
      capped: boolean;
    }
  | { kind: 'timeout'; timeoutMs: number };
type ToolResult =
  { ok: true; text: string } | { ok: false; status: number; errorClass: ErrorClass | null; message: string };

type ChainMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/**
 * Tool-call chains: each step is a non-streamed chat completion offering the scenario's tools; when
 * the model answers with tool calls, each is POSTed to its tool's `invokePath` with the model's
 * arguments, and the results go back as `tool` messages. The chain ends with a text answer; no
 * answer within `maxSteps` model calls fails it (`other`). Every tool call is tallied as
 * `tool.<name>` (passed = the tool answered below 400). Usage adds up over the steps; E2E is
 * the whole chain, TTFT is not defined for it (null).
 *
 * Every tool answer is recorded as a tool-call observation (version from `x-tool-version`, the
 * bounded shape of its JSON, never the body) for the schema-drift watch. A tool with a
 * `fallback` is called there instead when its main call times out (`timeoutMs`, 800 ms when not
 * given), answers 5xx, or breaks its declared contract; the fallback gets 200 ms more (spec).
 */
export class ToolChainDriver implements RequestDriver {
  private readonly pool: Pool;
  private readonly chatPath: string;
  private readonly headers: Record<string, string>;
  private readonly toolSpecs: unknown[];
  private readonly tools: Map<string, PlannedTool>;

  constructor(
    private readonly scenario: ToolChainScenario,
    target: HttpTarget,
    options: DriverOptions,
  ) {
    const { origin, path } = targetPath(target.baseUrl, '/chat/completions');
    this.chatPath = path;
    this.pool = new Pool(origin, {
      connections: options.connections * 2,
      pipelining: 1,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.headers = {
      'content-type': 'application/json',
      ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
    };
    this.toolSpecs = scenario.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
    this.tools = new Map(
      scenario.tools.map((t) => [
        t.name,
        { spec: t, observer: toolObserverOf(t.name, t.contract, t.invokePath) },
      ]),
    );
  }

  private async post(
    path: string,
    body: unknown,
    request: DriverRequest,
    extra: Record<string, string> = {},
    signal = request.cancel.signal(),
  ) {
    const response = await this.pool.request({
      path,
      method: 'POST',
      headers: { ...this.headers, ...extra, ...request.headers },
      body: JSON.stringify(body),
      signal,
    });
    const { text, capped } = await readBody(response.body, BODY_CAP);
    return { status: response.statusCode, headers: response.headers, text, capped };
  }

  /** One call of a tool endpoint, within `timeoutMs` when given; other failures throw. */
  private async callTool(
    path: string,
    args: unknown,
    request: DriverRequest,
    headers: Record<string, string>,
    timeoutMs: number | undefined,
  ): Promise<ToolAnswer> {
    if (timeoutMs === undefined)
      return { kind: 'answer', ...(await this.post(path, args, request, headers)) };
    const timer = AbortSignal.timeout(timeoutMs);
    try {
      return {
        kind: 'answer',
        ...(await this.post(path, args, request, headers, AbortSignal.any([request.cancel.signal(), timer]))),
      };
    } catch (error) {
      if (timer.aborted && !request.cancel.aborted) return { kind: 'timeout', timeoutMs };
      throw error;
    }
  }

  /** Calls a tool (and its fallback when the main call fails it), recording each answer. */
  private async invokeTool(
    tool: PlannedTool,
    args: unknown,
    request: DriverRequest,
    calls: ToolCallObservation[],
  ): Promise<ToolResult> {
    const { spec, observer } = tool;
    const fallback = spec.fallback;
    const mainTimeoutMs = spec.timeoutMs ?? (fallback ? DEFAULT_MAIN_TIMEOUT_MS : undefined);
    const main = await this.callTool(
      spec.invokePath,
      args,
      request,
      headerTexts(spec.headers),
      mainTimeoutMs,
    );
    const seen =
      main.kind === 'answer'
        ? observeToolCall(observer, main.status, main.headers, main.text, main.capped)
        : unansweredToolCall(observer, 0);
    const failed = main.kind === 'timeout' || main.status >= 500 || breaksContract(observer, seen);
    if (fallback === undefined || !failed) {
      pushToolCall(calls, seen);
      return this.toolResult(spec.name, '', main);
    }
    pushToolCall(calls, { ...seen, fallbackTriggered: true });
    const answer = await this.callTool(
      fallback.invokePath ?? spec.invokePath,
      args,
      request,
      headerTexts({ ...spec.headers, ...fallback.headers }),
      fallback.timeoutMs ?? (mainTimeoutMs ?? DEFAULT_MAIN_TIMEOUT_MS) + FALLBACK_EXTRA_MS,
    );
    const fellBack =
      answer.kind === 'answer'
        ? observeToolCall(observer, answer.status, answer.headers, answer.text, answer.capped)
        : unansweredToolCall(observer, 0);
    pushToolCall(calls, { ...fellBack, fallback: true });
    return this.toolResult(spec.name, 'fallback: ', answer);
  }

  private toolResult(name: string, via: string, answer: ToolAnswer): ToolResult {
    // "tool <name>: ..." is how the analyzer's record digest tells a failed tool call.
    if (answer.kind === 'timeout')
      return {
        ok: false,
        status: 0,
        errorClass: 'timeout',
        message: `tool ${name}: ${via}no answer within ${answer.timeoutMs} ms`,
      };
    if (answer.status >= 400)
      return {
        ok: false,
        status: answer.status,
        errorClass: httpErrorClass(answer.status),
        message: `tool ${name}: ${via}HTTP ${answer.status}`,
      };
    return { ok: true, text: answer.text };
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const assertions: Record<string, boolean> = {};
    const toolCalls: ToolCallObservation[] = [];
    const usage = { promptTokens: 0, completionTokens: 0, cachedTokens: null as number | null };
    let sawUsage = false;
    let status = 0;
    const outcome = (fields: Partial<DriverOutcome>): DriverOutcome => ({
      status,
      e2eMs: performance.now() - request.startMono,
      ttftMs: null,
      chunkOffsetsMs: [],
      errorClass: null,
      inputTokensClient: request.item.inputTokensClient,
      outputTokensClient: 0,
      usage: sawUsage ? usage : null,
      content: '',
      finishReason: null,
      assertions,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
      ...fields,
    });
    if (!request.gate(this.chatPath)) return outcome({ e2eMs: 0, gated: true });
    const messages: ChainMessage[] = request.item.messages.map((m) => ({
      role: m.role === 'assistant' ? 'user' : m.role,
      content: m.content,
    }));
    try {
      for (let step = 0; step < this.scenario.maxSteps; step++) {
        const chat = await this.post(
          this.chatPath,
          {
            model: this.scenario.model,
            messages,
            tools: this.toolSpecs,
            tool_choice: 'auto',
            max_tokens: this.scenario.maxTokens,
            stream: false,
          },
          request,
        );
        status = chat.status;
        const httpClass = httpErrorClass(chat.status);
        if (httpClass)
          return outcome({
            errorClass: httpClass,
            errorMessage: `step ${step}: HTTP ${chat.status}: ${chat.text.slice(0, 500)}`,
          });
        const assembler = new ChatStreamAssembler({ keepLogprobs: false });
        assembler.accept(chat.text);
        const parsed = assembler.result();
        if (parsed.usage) {
          sawUsage = true;
          usage.promptTokens += parsed.usage.promptTokens;
          usage.completionTokens += parsed.usage.completionTokens;
          if (parsed.usage.cachedTokens !== null)
            usage.cachedTokens = (usage.cachedTokens ?? 0) + parsed.usage.cachedTokens;
        }
        if (parsed.toolCalls.length === 0) {
          return outcome({
            content: parsed.content,
            outputTokensClient: countOutputTokens(parsed.content),
            finishReason: parsed.finishReason,
          });
        }
        const calls = parsed.toolCalls.map((call, i) => ({
          id: call.id ?? `call_${step}_${i}`,
          type: 'function' as const,
          function: { name: call.name, arguments: call.arguments },
        }));
        messages.push({
          role: 'assistant',
          content: parsed.content === '' ? null : parsed.content,
          tool_calls: calls,
        });
        for (const call of calls) {
          const tool = this.tools.get(call.function.name);
          if (!tool) {
            assertions[`tool.${call.function.name}`] = false;
            return outcome({
              errorClass: 'other',
              errorMessage: `step ${step}: the model called unknown tool ${call.function.name}`,
            });
          }
          let args: unknown;
          try {
            args = call.function.arguments === '' ? {} : JSON.parse(call.function.arguments);
          } catch {
            assertions[`tool.${tool.spec.name}`] = false;
            return outcome({
              errorClass: 'other',
              errorMessage: `step ${step}: arguments for ${tool.spec.name} are not JSON`,
            });
          }
          const result = await this.invokeTool(tool, args, request, toolCalls);
          assertions[`tool.${tool.spec.name}`] = result.ok;
          if (!result.ok) {
            status = result.status;
            return outcome({ errorClass: result.errorClass, errorMessage: result.message });
          }
          messages.push({ role: 'tool', tool_call_id: call.id, content: result.text });
        }
      }
      return outcome({
        errorClass: 'other',
        errorMessage: `no final answer after ${this.scenario.maxSteps} model calls`,
      });
    } catch (error) {
      return outcome({
        // The model calls are non-streamed: a body that is not a completion is malformed JSON.
        errorClass: classifyError(error, request.cancel, status !== 0, 'json'),
        errorMessage: errorText(error),
      });
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
