import { request } from 'undici';
import type { CampaignSpec } from '@fathom/contracts';
import { BodyTooLarge, errorCode, readBodyWithin } from '@fathom/load';

export type TargetProbe =
  | {
      reachable: true;
      models: string[];
      /** What the model look-up got when it found no model (status, URL asked, body), else null. */
      lookup: string | null;
    }
  | { reachable: false; reason: string }
  /** The probe failed while this process itself was stalled: nothing is known about the target. */
  | { reachable: 'unknown'; reason: string; stalledMs: number };

/**
 * Longest gap between ticks of a 50 ms interval while it runs: how long this process's event
 * loop was stalled (garbage collection, a busy service beside it, too many shards at once).
 */
class StallWatch {
  private last = performance.now();
  private worst = 0;
  private readonly timer = setInterval(() => this.tick(), 50);

  private tick(): void {
    const now = performance.now();
    this.worst = Math.max(this.worst, now - this.last - 50);
    this.last = now;
  }

  stop(): number {
    clearInterval(this.timer);
    this.tick();
    return Math.round(this.worst);
  }
}

/** A models list is kilobytes; an answer past this is cut off (a target sending without end held the process's memory until the probe's timeout). */
const MAX_MODELS_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * Checks that a target answers at all before a shard starts, so that an unreachable target
 * fails the run at once with a reason instead of producing a run of connection errors, and
 * reads the models it serves (`GET /models`, OpenAI format). Any HTTP answer counts as
 * reachable (even 404/401: the requests themselves will tell).
 */
export async function probeTarget(baseUrl: string, options: { timeoutMs: number }): Promise<TargetProbe> {
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  const watch = new StallWatch();
  let stalledMs = 0;
  try {
    const response = await request(url, {
      method: 'GET',
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const text = await readBodyWithin(response.body, MAX_MODELS_ANSWER_BYTES).catch((error: unknown) => {
      // Reachable all the same: the look-up says what was wrong with the answer.
      if (error instanceof BodyTooLarge) return null;
      throw error;
    });
    if (text === null)
      return {
        reachable: true,
        models: [],
        lookup: `GET ${url} answered HTTP ${response.statusCode} with more than ${MAX_MODELS_ANSWER_BYTES / 1024 / 1024} MiB: not read further`,
      };
    const models = response.statusCode === 200 ? modelIds(text) : [];
    return {
      reachable: true,
      models,
      lookup: models.length ? null : lookupProblem(url, response.statusCode, text),
    };
  } catch (error) {
    stalledMs = watch.stop();
    const e = error as Error;
    const code = errorCode(error);
    // A timer that fired late because this process stalled is not the target's slowness: its
    // answer may be sitting unread in the socket. A refusal, though, is the target's own.
    if (
      code !== 'ECONNREFUSED' &&
      code !== 'ENOTFOUND' &&
      stalledMs >= Math.min(1000, options.timeoutMs / 2)
    ) {
      return {
        reachable: 'unknown',
        stalledMs,
        reason: `the load-generator itself stalled ${stalledMs} ms while probing ${url}: the target was not judged`,
      };
    }
    const what =
      e.name === 'TimeoutError'
        ? `no answer within ${options.timeoutMs} ms`
        : `${code ? `${code} ` : ''}${e.message}`;
    return { reachable: false, reason: `target unreachable: ${url}: ${what}` };
  } finally {
    if (stalledMs === 0) watch.stop();
  }
}

/** Why `GET url` gave no model, in words a user can act on. */
function lookupProblem(url: string, status: number, text: string): string {
  const body = text.replace(/\s+/g, ' ').trim().slice(0, 120);
  const lacksV1 = !/\/v1\/models$/.test(url);
  let problem: string;
  if (status !== 200) problem = `GET ${url} answered HTTP ${status}${body ? ` (${body})` : ''}`;
  else if (!isModelList(text))
    problem = `GET ${url} answered 200 with a body that is not a model list${body ? ` (${body})` : ''}`;
  else problem = `GET ${url} answered 200 with an empty model list`;
  // OpenAI-compatible servers serve the API under /v1; a base URL without it asks the wrong path.
  return lacksV1
    ? `${problem}; the base URL does not end in /v1 (OpenAI-compatible servers serve /v1/models)`
    : problem;
}

function isModelList(text: string): boolean {
  try {
    return Array.isArray((JSON.parse(text) as { data?: unknown }).data);
  } catch {
    return false;
  }
}

function modelIds(text: string): string[] {
  try {
    const body = JSON.parse(text) as { data?: Array<{ id?: unknown }> };
    return (body.data ?? [])
      .map((m) => m.id)
      .filter((id): id is string => typeof id === 'string' && id.length > 0);
  } catch {
    return [];
  }
}

/**
 * A scenario that names no model gets the first one the target lists, as vLLM's own benchmark
 * does. Returns the spec to run, or the reason it cannot run.
 */
export function withResolvedModel(
  spec: CampaignSpec,
  models: readonly string[],
  lookup: string | null = null,
): CampaignSpec | string {
  const scenario = spec.scenario;
  if (!('model' in scenario) && !['chat', 'embeddings', 'tool-chain', 'agent-loop'].includes(scenario.type))
    return spec;
  if ((scenario as { model?: string }).model) return spec;
  if (!models.length) {
    return `scenario.model is not set and the model look-up found none: ${lookup ?? 'the target lists no model'}; name the model in the campaign`;
  }
  return { ...spec, scenario: { ...scenario, model: models[0] } } as CampaignSpec;
}
