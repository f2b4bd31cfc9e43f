import { assessHallucinationRisk, parseChatStream, type ParsedToolCall } from '@fathom/semantic';
import type { TargetObservation } from '@fathom/contracts';

export interface TargetReply extends TargetObservation {
  readonly content: string;
  /** The API's `refusal` text ('' when none). */
  readonly refusal: string;
  readonly parsedToolCalls: readonly ParsedToolCall[];
  readonly error: string | null;
}

/**
 * Sends one chat request (streamed, with logprobs so that per-token entropy can be judged) and
 * measures end-to-end time and time to the first content chunk on the client.
 */
export async function callChatTarget(
  target: { baseUrl: string; apiKey?: string },
  body: Record<string, unknown>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<TargetReply> {
  const started = performance.now();
  let ttftMs: number | null = null;
  try {
    const response = await fetch(`${target.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      },
      body: JSON.stringify({ ...body, stream: true, logprobs: true, top_logprobs: 5 }),
      signal: signal
        ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
        : AbortSignal.timeout(timeoutMs),
      // A redirect could lead outside FATHOM_ALLOWED_TARGETS: not followed.
      redirect: 'manual',
    });
    if (!response.ok || !response.body) {
      const text = await response.text();
      return failed(performance.now() - started, `HTTP ${response.status}: ${text.slice(0, 200)}`);
    }
    const decoder = new TextDecoder();
    let text = '';
    for await (const chunk of response.body) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      if (ttftMs === null && text.includes('"content"')) ttftMs = performance.now() - started;
    }
    const e2eMs = performance.now() - started;
    const parsed = parseChatStream(text);
    const risk = assessHallucinationRisk(parsed.logprobs);
    const riskTokens = risk.segments.reduce((n, s) => n + (s.end - s.start), 0);
    return {
      ok: true,
      e2eMs,
      ttftMs,
      hallucinationRisk: risk.status === 'ok' && risk.rows.length > 0 ? riskTokens / risk.rows.length : null,
      content: parsed.content,
      refusal: parsed.choices[0]?.refusal ?? '',
      parsedToolCalls: parsed.toolCalls,
      error: null,
    };
  } catch (error) {
    return failed(performance.now() - started, (error as Error).message);
  }
}

function failed(e2eMs: number, error: string): TargetReply {
  return {
    ok: false,
    e2eMs,
    ttftMs: null,
    hallucinationRisk: null,
    content: '',
    refusal: '',
    parsedToolCalls: [],
    error,
  };
}

/** One vector per text from an OpenAI-compatible /embeddings endpoint. */
export async function embedTexts(
  endpoint: { baseUrl: string; model: string },
  texts: readonly string[],
  timeoutMs: number,
): Promise<number[][]> {
  const response = await fetch(`${endpoint.baseUrl.replace(/\/+$/, '')}/embeddings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: endpoint.model, input: texts }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) throw new Error(`embeddings: HTTP ${response.status}`);
  const body = (await response.json()) as { data: Array<{ index: number; embedding: number[] }> };
  return [...body.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
}
