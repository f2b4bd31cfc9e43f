import { request } from 'undici';
import type { ChatScenario, TokenLogprob } from '@fathom/contracts';
import type { HttpTarget } from './openai-chat.driver';
import { readBodyWithin } from './http-body.util';
import { targetPath } from './target-url.util';

const ERROR_BODY_CAP = 300;
/** A logprobs answer is tens of KB (5 alternatives a token); one past this is cut off, the check failed. */
const MAX_LOGPROBS_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * One non-streamed `/chat/completions` request with `logprobs` and `top_logprobs`, outside the
 * load's timing (the adversarial-entropy probes). Resolves to the response's token logprobs
 * (OpenAI's `choices[0].logprobs.content`); rejects with the status and the start of the body
 * on a non-200 answer, or when the answer is not that shape.
 */
export function chatLogprobsClient(
  target: HttpTarget,
  scenario: ChatScenario,
  options: {
    topLogprobs: number;
    timeoutMs: number;
    /** Ends a call in flight at once (the run's abort), besides its timeout. */
    signal?: AbortSignal;
  },
): (prompt: string) => Promise<TokenLogprob[]> {
  const { origin, path } = targetPath(target.baseUrl, '/chat/completions');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
  return async (prompt) => {
    const body = JSON.stringify({
      ...(scenario.model ? { model: scenario.model } : {}),
      messages: [
        ...(scenario.system !== undefined ? [{ role: 'system', content: scenario.system }] : []),
        { role: 'user', content: prompt },
      ],
      max_tokens: scenario.maxTokens,
      ...(scenario.temperature !== undefined ? { temperature: scenario.temperature } : {}),
      stream: false,
      logprobs: true,
      top_logprobs: options.topLogprobs,
    });
    const response = await request(origin + path, {
      method: 'POST',
      headers,
      body,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: options.signal
        ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
        : AbortSignal.timeout(options.timeoutMs),
    });
    const text = await readBodyWithin(response.body, MAX_LOGPROBS_ANSWER_BYTES);
    if (response.statusCode !== 200)
      throw new Error(`HTTP ${response.statusCode}: ${text.slice(0, ERROR_BODY_CAP)}`);
    return parseChatLogprobs(text);
  };
}

/** `choices[0].logprobs.content` of a chat completion as TokenLogprob rows. */
export function parseChatLogprobs(text: string): TokenLogprob[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`not JSON: ${text.slice(0, ERROR_BODY_CAP)}`);
  }
  const content = (json as { choices?: { logprobs?: { content?: unknown } | null }[] })?.choices?.[0]
    ?.logprobs?.content;
  if (!Array.isArray(content)) throw new Error('the answer has no choices[0].logprobs.content');
  return content.map((entry: unknown, i) => {
    const e = entry as { token?: unknown; logprob?: unknown; top_logprobs?: unknown };
    if (typeof e?.token !== 'string' || typeof e.logprob !== 'number')
      throw new Error(`logprobs.content[${i}] lacks token or logprob`);
    const top = Array.isArray(e.top_logprobs) ? e.top_logprobs : [];
    return {
      token: e.token,
      logprob: e.logprob,
      top: top
        .filter(
          (t: unknown): t is { token: string; logprob: number } =>
            typeof (t as { token?: unknown })?.token === 'string' &&
            typeof (t as { logprob?: unknown }).logprob === 'number',
        )
        .map((t) => ({ token: t.token, logprob: t.logprob })),
    };
  });
}
