import { Pool } from 'undici';
import { countTokens } from 'gpt-tokenizer';
import type { ToolChainScenario } from '@fathom/contracts';
import { ChatStreamAssembler } from '@fathom/semantic';
import { classifyError, errorText, httpErrorClass } from './error-class.util';
import { readBodyText } from './http-body.util';
import type { DriverOptions, HttpTarget } from './openai-chat.driver';
import type { DriverOutcome, DriverRequest, RequestDriver } from './request-outcome';
import { targetPath } from './target-url.util';

const BODY_CAP = 1024 * 1024;

type ChainMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/**
 * Tool-call chains: each step is a non-streamed chat completion offering the scenario's tools; when
 * the model answers with tool calls, each is POSTed to its tool's `invokePath` with the model's
 * arguments, and the results go back as `tool` messages. The chain ends with a text answer; no
 * answer within `maxSteps` model calls fails it (`other`). Every tool call is tallied as
 * `tool.<name>` (passed = the tool answered 2xx with JSON). Usage adds up over the steps; E2E is
 * the whole chain, TTFT is not defined for it (null).
 */
export class ToolChainDriver implements RequestDriver {
  private readonly pool: Pool;
  private readonly chatPath: string;
  private readonly headers: Record<string, string>;
  private readonly toolSpecs: unknown[];

  constructor(
    private readonly scenario: ToolChainScenario,
    target: HttpTarget,
    options: DriverOptions,
  ) {
    const { origin, path } = targetPath(target.baseUrl, '/chat/completions');
    this.chatPath = path;
    this.pool = new Pool(origin, { connections: options.connections * 2, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
    this.headers = { 'content-type': 'application/json', ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}) };
    this.toolSpecs = scenario.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  }

  private async post(path: string, body: unknown, request: DriverRequest, extra: Record<string, string> = {}) {
    const response = await this.pool.request({
      path,
      method: 'POST',
      headers: { ...this.headers, ...extra, ...request.headers },
      body: JSON.stringify(body),
      signal: request.cancel.signal(),
    });
    return { status: response.statusCode, text: await readBodyText(response.body, BODY_CAP) };
  }

  async execute(request: DriverRequest): Promise<DriverOutcome> {
    const assertions: Record<string, boolean> = {};
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
      ...fields,
    });
    if (!request.gate(this.chatPath)) return outcome({ e2eMs: 0, gated: true });
    const messages: ChainMessage[] = request.item.messages.map((m) => ({ role: m.role === 'assistant' ? 'user' : m.role, content: m.content }));
    try {
      for (let step = 0; step < this.scenario.maxSteps; step++) {
        const chat = await this.post(
          this.chatPath,
          { model: this.scenario.model, messages, tools: this.toolSpecs, tool_choice: 'auto', max_tokens: this.scenario.maxTokens, stream: false },
          request,
        );
        status = chat.status;
        const httpClass = httpErrorClass(chat.status);
        if (httpClass) return outcome({ errorClass: httpClass, errorMessage: `step ${step}: HTTP ${chat.status}: ${chat.text.slice(0, 500)}` });
        const assembler = new ChatStreamAssembler({ keepLogprobs: false });
        assembler.accept(chat.text);
        const parsed = assembler.result();
        if (parsed.usage) {
          sawUsage = true;
          usage.promptTokens += parsed.usage.promptTokens;
          usage.completionTokens += parsed.usage.completionTokens;
          if (parsed.usage.cachedTokens !== null) usage.cachedTokens = (usage.cachedTokens ?? 0) + parsed.usage.cachedTokens;
        }
        if (parsed.toolCalls.length === 0) {
          return outcome({
            content: parsed.content,
            outputTokensClient: parsed.content === '' ? 0 : countTokens(parsed.content),
            finishReason: parsed.finishReason,
          });
        }
        const calls = parsed.toolCalls.map((call, i) => ({ id: call.id ?? `call_${step}_${i}`, type: 'function' as const, function: { name: call.name, arguments: call.arguments } }));
        messages.push({ role: 'assistant', content: parsed.content === '' ? null : parsed.content, tool_calls: calls });
        for (const call of calls) {
          const tool = this.scenario.tools.find((t) => t.name === call.function.name);
          if (!tool) {
            assertions[`tool.${call.function.name}`] = false;
            return outcome({ errorClass: 'other', errorMessage: `step ${step}: the model called unknown tool ${call.function.name}` });
          }
          let args: unknown;
          try {
            args = call.function.arguments === '' ? {} : JSON.parse(call.function.arguments);
          } catch {
            assertions[`tool.${tool.name}`] = false;
            return outcome({ errorClass: 'other', errorMessage: `step ${step}: arguments for ${tool.name} are not JSON` });
          }
          const result = await this.post(tool.invokePath, args, request, tool.headers);
          const ok = result.status < 400;
          assertions[`tool.${tool.name}`] = ok;
          if (!ok) {
            status = result.status;
            return outcome({ errorClass: httpErrorClass(result.status), errorMessage: `tool ${tool.name}: HTTP ${result.status}` });
          }
          messages.push({ role: 'tool', tool_call_id: call.id, content: result.text });
        }
      }
      return outcome({ errorClass: 'other', errorMessage: `no final answer after ${this.scenario.maxSteps} model calls` });
    } catch (error) {
      return outcome({ errorClass: classifyError(error, request.cancel, status !== 0), errorMessage: errorText(error) });
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
