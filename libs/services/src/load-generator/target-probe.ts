import { request } from 'undici';

/**
 * Checks that a target answers at all before a shard starts, so that an unreachable target
 * fails the run at once with a reason instead of producing a run of connection errors.
 * Any HTTP answer counts as reachable (even 404/401: the requests themselves will tell).
 * Returns null when reachable, else the reason.
 */
export async function probeTarget(baseUrl: string, options: { timeoutMs: number }): Promise<string | null> {
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  try {
    const response = await request(url, {
      method: 'GET',
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    await response.body.dump();
    return null;
  } catch (error) {
    const e = error as Error & { code?: string; cause?: { code?: string } };
    const code = e.code ?? e.cause?.code;
    return `target unreachable: ${url}: ${code ? `${code} ` : ''}${e.message}`;
  }
}
