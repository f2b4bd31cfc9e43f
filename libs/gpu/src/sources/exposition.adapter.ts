import type { PromFamily } from '../exposition/prometheus-text.parser';
import type { NormalisedSample } from '../model/gpu-sample.model';
import { adaptDcgm, isDcgmMetricName } from './dcgm.adapter';
import { indexSamples } from './sample-index.util';
import { adaptTgi } from './tgi.adapter';
import { adaptTriton } from './triton.adapter';
import { adaptVllm } from './vllm.adapter';

export interface ExpositionAdaptOptions {
  /** Identity to use as `gpu` for inference-server metrics (e.g. the scrape target's host:port). */
  readonly serverId?: string;
}

/** Which known sources an exposition carries, by metric-name prefix. */
export function expositionSources(families: readonly PromFamily[]): Set<'dcgm' | 'vllm' | 'tgi' | 'triton'> {
  const found = new Set<'dcgm' | 'vllm' | 'tgi' | 'triton'>();
  for (const family of families) {
    for (const sample of family.samples) {
      const name = sample.name;
      if (isDcgmMetricName(name)) found.add('dcgm');
      else if (name.startsWith('vllm:')) found.add('vllm');
      else if (name.startsWith('tgi_')) found.add('tgi');
      else if (name.startsWith('nv_')) found.add('triton');
    }
  }
  return found;
}

/**
 * Runs every source adapter over one exposition. A scrape can mix sources (a Prometheus
 * federation endpoint, Triton's GPU + model metrics), so all adapters run; each only reads its
 * own metric names.
 */
export function adaptExposition(
  families: readonly PromFamily[],
  options: ExpositionAdaptOptions = {},
): NormalisedSample[] {
  const index = indexSamples(families);
  return [
    ...adaptDcgm(index),
    ...adaptVllm(index, options.serverId),
    ...adaptTgi(index, options.serverId),
    ...adaptTriton(index, options.serverId),
  ];
}
