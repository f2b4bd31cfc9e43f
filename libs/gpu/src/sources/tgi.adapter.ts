import { dedupeSamples, type NormalisedSample } from '../model/gpu-sample.model';
import { emitLatencyHistogram, emitScalar, type KeyOf, type SampleIndex } from './sample-index.util';

/**
 * Hugging Face text-generation-inference router `/metrics`. Names are from TGI's documented
 * metric list (router `tgi_*` metrics, Rust `metrics` crate: counters carry no `_total`; some
 * exporters add it, so both are accepted); no TGI capture was available to test against, so only
 * the well-established names are mapped:
 *   tgi_queue_size (gauge) -> requests_waiting; tgi_batch_current_size (gauge) -> requests_running;
 *   tgi_request_success / tgi_request_failure (counters) -> requests_succeeded/failed_total;
 *   tgi_request_duration, tgi_request_queue_duration, tgi_request_mean_time_per_token_duration
 *   (histograms, seconds) -> e2e, queue, tpot.
 * TGI serves one model per process and has no model label: gpu = `serverId` or `tgi`.
 */
export function adaptTgi(index: SampleIndex, serverId?: string): NormalisedSample[] {
  const keyOf: KeyOf = () => ({ gpu: serverId ?? 'tgi', instance: null });
  return dedupeSamples([
    ...emitScalar(index, 'tgi', ['tgi_queue_size'], 'requests_waiting', keyOf, { mode: 'first' }),
    ...emitScalar(index, 'tgi', ['tgi_batch_current_size'], 'requests_running', keyOf, { mode: 'first' }),
    ...emitScalar(
      index,
      'tgi',
      ['tgi_request_success', 'tgi_request_success_total'],
      'requests_succeeded_total',
      keyOf,
      { mode: 'sum' },
    ),
    ...emitScalar(
      index,
      'tgi',
      ['tgi_request_failure', 'tgi_request_failure_total'],
      'requests_failed_total',
      keyOf,
      { mode: 'sum' },
    ),
    ...emitLatencyHistogram(index, 'tgi', ['tgi_request_duration'], 'e2e', keyOf),
    ...emitLatencyHistogram(index, 'tgi', ['tgi_request_queue_duration'], 'queue', keyOf),
    ...emitLatencyHistogram(index, 'tgi', ['tgi_request_mean_time_per_token_duration'], 'tpot', keyOf),
  ]);
}
