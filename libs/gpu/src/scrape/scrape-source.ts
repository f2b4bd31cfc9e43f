import { fetch as undiciFetch } from 'undici';
import type { GpuTelemetry } from '@fathom/contracts';
import { GpuParseError } from '../model/gpu-parse.error';
import type { NormalisedSample } from '../model/gpu-sample.model';
import { parseGpuTextDetailed, type GpuTextFormatOption } from '../parse/gpu-text.parser';

export type ScrapeHealth = GpuTelemetry['health'];

export interface ScrapeTarget {
  readonly url: string;
  readonly format: GpuTextFormatOption;
  /** Whole-scrape deadline: connect, headers and body. */
  readonly timeoutMs: number;
  /** `gpu` for inference-server metrics; defaults to the server's own identity (model name). */
  readonly serverId?: string;
}

/**
 * The outcome of one scrape. Anything but `ok` is a gap: no samples, and `error` says why.
 * It is never zeros and never a throw.
 */
export interface ScrapeResult {
  readonly health: ScrapeHealth;
  readonly samples: NormalisedSample[];
  readonly error?: string;
  readonly durationMs: number;
}

/** The subset of `fetch` this module needs (undici's by default; injectable for tests). */
export type FetchLike = (
  url: string,
  init: { signal: AbortSignal; headers: Record<string, string>; redirect: 'manual' },
) => Promise<{
  ok: boolean;
  status: number;
  body: ReadableStream<Uint8Array> | null;
}>;

/**
 * A metrics page's most bytes: vLLM's is ~100 KB, DCGM's tens of KB a GPU. An endpoint that
 * answered without end was held whole until the scrape's timeout, every interval.
 */
export const MAX_SCRAPE_BYTES = 16 * 1024 * 1024;

class ScrapeTooLarge extends Error {}

async function readCapped(body: ReadableStream<Uint8Array> | null): Promise<string> {
  if (!body) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  // Leaving the loop early cancels the body (the connection is closed).
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    if (bytes > MAX_SCRAPE_BYTES) throw new ScrapeTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const ACCEPT = 'text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1';

export async function scrapeSource(
  target: ScrapeTarget,
  fetchImpl: FetchLike = undiciFetch as unknown as FetchLike,
): Promise<ScrapeResult> {
  const started = Date.now();
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, target.timeoutMs);
  const gap = (health: Exclude<ScrapeHealth, 'ok'>, error: string): ScrapeResult => ({
    health,
    samples: [],
    error,
    durationMs: Date.now() - started,
  });
  try {
    let body: string;
    try {
      // A redirect could lead outside FATHOM_ALLOWED_TARGETS (a metadata address): not followed.
      const response = await fetchImpl(target.url, {
        signal: controller.signal,
        headers: { accept: ACCEPT },
        redirect: 'manual',
      });
      if (!response.ok) {
        // The body is not a reading: dropped, not read.
        await response.body?.cancel().catch(() => undefined);
        const redirected =
          response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : '';
        return gap('down', `HTTP ${response.status} from ${target.url}${redirected}`);
      }
      body = await readCapped(response.body);
    } catch (error) {
      if (error instanceof ScrapeTooLarge)
        return gap(
          'garbage',
          `${target.url}: answer over ${MAX_SCRAPE_BYTES / 1024 / 1024} MiB (a metrics page is kilobytes): not read further`,
        );
      if (timedOut)
        return gap('timeout', `no complete response from ${target.url} within ${target.timeoutMs} ms`);
      return gap('down', `${target.url}: ${describe(error)}`);
    }
    try {
      const parsed = parseGpuTextDetailed(body, target.format, { serverId: target.serverId });
      return { health: 'ok', samples: parsed.samples, durationMs: Date.now() - started };
    } catch (error) {
      if (error instanceof GpuParseError) return gap('garbage', `${target.url}: ${error.message}`);
      // Whatever else a parser throws on what the endpoint sent is still an unreadable answer.
      return gap('garbage', `${target.url}: unreadable answer (${describe(error)})`);
    }
  } finally {
    clearTimeout(timer);
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    const code =
      cause && typeof cause === 'object' && 'code' in cause
        ? ` (${String((cause as { code: unknown }).code)})`
        : '';
    const causeMessage = cause instanceof Error ? `: ${cause.message}` : '';
    return `${error.message}${causeMessage}${code}`;
  }
  return String(error);
}
