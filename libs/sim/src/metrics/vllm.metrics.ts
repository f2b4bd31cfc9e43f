import type { ServingEngine } from '../engine/serving.engine';
import { formatNumber, Histogram } from './histogram';

// Bucket edges quoted from vllm/v1/metrics/loggers.py (see /work/shared/fixtures/vllm/vllm-metrics-catalog.json).
const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
  80.0, 160.0, 640.0, 2560.0,
];
const ITL_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
];
const REQUEST_BUCKETS = [
  0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
  960.0, 1920.0, 7680.0,
];
const ITERATION_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
const TOKEN_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

export interface FinishedRequestSample {
  finishReason: string;
  promptTokens: number;
  generationTokens: number;
  /** Seconds (wall). */
  ttftS: number | null;
  queueS: number | null;
  prefillS: number | null;
  decodeS: number | null;
  e2eS: number;
  /** Gaps between consecutive tokens, seconds. */
  interTokenS: number[];
}

/**
 * `/metrics` in vLLM's exposition: `vllm:` names, `model_name` and (V1) `engine` labels.
 * `legacyNames` switches to the pre-0.9 names (gpu_cache_usage_perc, gpu_prefix_cache_hit_rate,
 * time_per_output_token_seconds, num_requests_swapped) with only `model_name`.
 */
export class VllmMetrics {
  private readonly ttft = new Histogram(TTFT_BUCKETS);
  private readonly itl = new Histogram(ITL_BUCKETS);
  private readonly e2e = new Histogram(REQUEST_BUCKETS);
  private readonly queue = new Histogram(REQUEST_BUCKETS);
  private readonly prefill = new Histogram(REQUEST_BUCKETS);
  private readonly decode = new Histogram(REQUEST_BUCKETS);
  private readonly inference = new Histogram(REQUEST_BUCKETS);
  private readonly iteration = new Histogram(ITERATION_BUCKETS);
  private readonly promptTokens = new Histogram(TOKEN_BUCKETS);
  private readonly generationTokens = new Histogram(TOKEN_BUCKETS);
  private readonly success = new Map<string, number>();

  constructor(
    private readonly model: string,
    private readonly engine: ServingEngine,
    private readonly legacy: () => boolean,
  ) {
    engine.onStep((step) => this.iteration.observe(step.tokens));
  }

  recordFinished(sample: FinishedRequestSample): void {
    this.success.set(sample.finishReason, (this.success.get(sample.finishReason) ?? 0) + 1);
    if (sample.ttftS !== null) this.ttft.observe(sample.ttftS);
    for (const gap of sample.interTokenS) this.itl.observe(gap);
    this.e2e.observe(sample.e2eS);
    if (sample.queueS !== null) this.queue.observe(sample.queueS);
    if (sample.prefillS !== null) this.prefill.observe(sample.prefillS);
    if (sample.decodeS !== null) this.decode.observe(sample.decodeS);
    if (sample.prefillS !== null && sample.decodeS !== null)
      this.inference.observe(sample.prefillS + sample.decodeS);
    this.promptTokens.observe(sample.promptTokens);
    this.generationTokens.observe(sample.generationTokens);
  }

  render(): string {
    const legacy = this.legacy();
    const labels = legacy ? `model_name="${this.model}"` : `engine="0",model_name="${this.model}"`;
    const s = this.engine.snapshot();
    let out = '';
    const metric = (name: string, type: string, help: string, body: string): void => {
      out += `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${body}`;
    };
    const sample = (name: string, value: number, extra = ''): string =>
      `${name}{${labels}${extra}} ${formatNumber(value)}\n`;

    metric(
      'vllm:num_requests_running',
      'gauge',
      'Number of requests in model execution batches.',
      sample('vllm:num_requests_running', s.running),
    );
    metric(
      'vllm:num_requests_waiting',
      'gauge',
      'Number of requests waiting to be processed.',
      sample('vllm:num_requests_waiting', s.waiting),
    );
    if (legacy) {
      metric(
        'vllm:num_requests_swapped',
        'gauge',
        'Number of requests swapped to CPU.',
        sample('vllm:num_requests_swapped', 0),
      );
      metric(
        'vllm:gpu_cache_usage_perc',
        'gauge',
        'GPU KV-cache usage. 1 means 100 percent usage.',
        sample('vllm:gpu_cache_usage_perc', s.kvUsage),
      );
      const rate = s.prefixQueriedTokens === 0 ? -1 : s.prefixHitTokens / s.prefixQueriedTokens;
      metric(
        'vllm:gpu_prefix_cache_hit_rate',
        'gauge',
        'GPU prefix cache block hit rate.',
        sample('vllm:gpu_prefix_cache_hit_rate', rate),
      );
    } else {
      metric(
        'vllm:kv_cache_usage_perc',
        'gauge',
        'KV-cache usage. 1 means 100 percent usage.',
        sample('vllm:kv_cache_usage_perc', s.kvUsage),
      );
      metric(
        'vllm:prefix_cache_queries_total',
        'counter',
        'Prefix cache queries, in terms of number of queried tokens.',
        sample('vllm:prefix_cache_queries_total', s.prefixQueriedTokens),
      );
      metric(
        'vllm:prefix_cache_hits_total',
        'counter',
        'Prefix cache hits, in terms of number of cached tokens.',
        sample('vllm:prefix_cache_hits_total', s.prefixHitTokens),
      );
    }
    metric(
      'vllm:num_preemptions_total',
      'counter',
      'Cumulative number of preemption from the engine.',
      sample('vllm:num_preemptions_total', s.preemptions),
    );
    metric(
      'vllm:prompt_tokens_total',
      'counter',
      'Number of prefill tokens processed.',
      sample('vllm:prompt_tokens_total', s.promptTokens),
    );
    metric(
      'vllm:generation_tokens_total',
      'counter',
      'Number of generation tokens processed.',
      sample('vllm:generation_tokens_total', s.generationTokens),
    );
    let success = '';
    for (const [reason, count] of this.success)
      success += sample('vllm:request_success_total', count, `,finished_reason="${reason}"`);
    metric('vllm:request_success_total', 'counter', 'Count of successfully processed requests.', success);
    metric(
      'vllm:iteration_tokens_total',
      'histogram',
      'Histogram of number of tokens per engine_step.',
      this.iteration.render('vllm:iteration_tokens_total', labels),
    );
    metric(
      'vllm:request_prompt_tokens',
      'histogram',
      'Number of prefill tokens processed.',
      this.promptTokens.render('vllm:request_prompt_tokens', labels),
    );
    metric(
      'vllm:request_generation_tokens',
      'histogram',
      'Number of generation tokens processed.',
      this.generationTokens.render('vllm:request_generation_tokens', labels),
    );
    metric(
      'vllm:time_to_first_token_seconds',
      'histogram',
      'Histogram of time to first token in seconds.',
      this.ttft.render('vllm:time_to_first_token_seconds', labels),
    );
    const itlName = legacy ? 'vllm:time_per_output_token_seconds' : 'vllm:inter_token_latency_seconds';
    metric(
      itlName,
      'histogram',
      legacy
        ? 'Histogram of time per output token in seconds.'
        : 'Histogram of inter-token latency in seconds.',
      this.itl.render(itlName, labels),
    );
    metric(
      'vllm:e2e_request_latency_seconds',
      'histogram',
      'Histogram of e2e request latency in seconds.',
      this.e2e.render('vllm:e2e_request_latency_seconds', labels),
    );
    metric(
      'vllm:request_queue_time_seconds',
      'histogram',
      'Histogram of time spent in WAITING phase for request.',
      this.queue.render('vllm:request_queue_time_seconds', labels),
    );
    metric(
      'vllm:request_inference_time_seconds',
      'histogram',
      'Histogram of time spent in RUNNING phase for request.',
      this.inference.render('vllm:request_inference_time_seconds', labels),
    );
    metric(
      'vllm:request_prefill_time_seconds',
      'histogram',
      'Histogram of time spent in PREFILL phase for request.',
      this.prefill.render('vllm:request_prefill_time_seconds', labels),
    );
    metric(
      'vllm:request_decode_time_seconds',
      'histogram',
      'Histogram of time spent in DECODE phase for request.',
      this.decode.render('vllm:request_decode_time_seconds', labels),
    );
    return out;
  }
}
