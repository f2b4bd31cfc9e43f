import { request } from 'undici';
import type { CampaignSpec } from '@fathom/contracts';

export type TargetProbe = { reachable: true; models: string[] } | { reachable: false; reason: string };

/**
 * Checks that a target answers at all before a shard starts, so that an unreachable target
 * fails the run at once with a reason instead of producing a run of connection errors, and
 * reads the models it serves (`GET /models`, OpenAI format). Any HTTP answer counts as
 * reachable (even 404/401: the requests themselves will tell).
 */
export async function probeTarget(baseUrl: string, options: { timeoutMs: number }): Promise<TargetProbe> {
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  try {
    const response = await request(url, {
      method: 'GET',
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const text = await response.body.text();
    return { reachable: true, models: response.statusCode === 200 ? modelIds(text) : [] };
  } catch (error) {
    const e = error as Error & { code?: string; cause?: { code?: string } };
    const code = e.code ?? e.cause?.code;
    return { reachable: false, reason: `target unreachable: ${url}: ${code ? `${code} ` : ''}${e.message}` };
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
export function withResolvedModel(spec: CampaignSpec, models: readonly string[]): CampaignSpec | string {
  const scenario = spec.scenario;
  if (!('model' in scenario) && !['chat', 'embeddings', 'tool-chain', 'agent-loop'].includes(scenario.type))
    return spec;
  if ((scenario as { model?: string }).model) return spec;
  if (!models.length) {
    return 'scenario.model is not set and the target lists no model at /v1/models: name the model in the campaign';
  }
  return { ...spec, scenario: { ...scenario, model: models[0] } } as CampaignSpec;
}
