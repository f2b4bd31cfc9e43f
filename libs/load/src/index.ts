export * from './engine/run-shard';
export * from './measure/window.snapshot';
export {
  addSparse,
  binCountsMs,
  decodeHistogram,
  decodeSparseHistogram,
  encodeHistogram,
  newLatencyHistogram,
  recordMs,
  countsAtOrBelowUs,
  percentileKey,
  quantilesFromHistogram,
  tailQuantilesMs,
  type Quantiles,
  type SparseHistogram,
} from './measure/latency-histogram.util';
export * from './measure/window.recorder';
export { SeededRandom } from './random/seeded-random';
export * from './measure/generator-health';
export * from './measure/record-budget';
export * from './adaptive/aimd.controller';
export * from './adaptive/gpu-memory.gauge';
export * from './profile/arrival.schedule';
export * from './profile/replay.loader';
export * from './dataset/prompt.source';
export * from './dataset/prompt-item';
export * from './dataset/dataset-parse.error';
export * from './perturb/prompt.perturbation';
export * from './perturb/protected-spans.util';
export * from './perturb/adversarial-entropy.perturbation';
export { chatLogprobsClient, parseChatLogprobs } from './driver/chat-logprobs.client';
export * from './driver/request-outcome';
export * from './driver/steps/step-assertion.evaluator';
export { classifyError, errorCode } from './driver/error-class.util';
export { BodyTooLarge, readBodyWithin } from './driver/http-body.util';
export { CLIENT_TOKENIZER } from './driver/output-token-count.util';
export * from './driver/tool-chain.driver';
export * from './driver/rag-layer.driver';
export { Http1Client, type Http1Exchange, type Http1ClientOptions } from './transport/http1.client';
export { Http1Error, type Http1ErrorCode } from './transport/http1.error';
export {
  Http1ResponseParser,
  MAX_HEAD_BYTES,
  type Http1ResponseSink,
} from './transport/http1-response.parser';
export * from './threshold/slo-verdict';
export * from './dataset/text.tokenizer';
export * from './dataset/factory/data-factory';
export * from './files/confined-path';
export * from './secrets/secret.walk';
export * from './secrets/secret.resolver';
export * from './target/target-allow-list';
