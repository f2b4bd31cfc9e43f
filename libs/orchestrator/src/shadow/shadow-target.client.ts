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
 * A replayed answer's most bytes (a chat answer is kilobytes), and an error answer's or an
 * embeddings answer's: a target streaming without end, or a huge body, costs one failed sample,
 * never the orchestrator's memory (before, the whole answer was held until the request timeout).
 */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

class AnswerTooLarge extends Error {
  constructor(what: string) {
    super(`${what} over ${MAX_ANSWER_BYTES / 1024 / 1024} MiB: not read further`);
  }
}

/** The body's text, `onText` told of what came so far at each chunk; rejects past MAX_ANSWER_BYTES. */
async function readCapped(
  response: Response,
  what: string,
  onText?: (text: string) => void,
): Promise<string> {
  if (!response.body) return '';
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    // Leaving the loop cancels the body: undici closes the connection.
    if (bytes > MAX_ANSWER_BYTES) throw new AnswerTooLarge(what);
    text += decoder.decode(chunk, { stream: true });
    onText?.(text);
  }
  return text + decoder.decode();
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
      const text = await readCapped(response, `HTTP ${response.status} answer`);
      return failed(performance.now() - started, `HTTP ${response.status}: ${text.slice(0, 200)}`);
    }
    const text = await readCapped(response, 'answer', (soFar) => {
      if (ttftMs === null && soFar.includes('"content"')) ttftMs = performance.now() - started;
    });
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
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`embeddings: HTTP ${response.status}`);
  }
  const body = JSON.parse(await readCapped(response, 'embeddings answer')) as {
    data: Array<{ index: number; embedding: number[] }>;
  };
  return [...body.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
}
