import { z } from 'zod';
import { RunShardCommandSchema, RunControlSchema, RunLifecycleSchema } from './events/run.event';
import { RequestTelemetrySchema, TelemetryWindowSchema, GpuTelemetrySchema } from './events/telemetry.event';
import { SemanticSignalSchema } from './events/signal.event';
import { SloTierChangeSchema, BreakerChangeSchema, RootCauseChangeSchema } from './events/state.event';
import { RunReportSchema } from './events/report.event';
import { DeadLetterSchema } from './events/dead-letter.event';
import { ShadowControlSchema, ShadowRequestSchema } from './events/shadow.event';

/**
 * A topic: its versioned name, the zod schema of its events, and how an event is keyed.
 * Keys decide partitions: events of one key stay in order. Where order does not matter (request
 * records, histogram windows) the key spreads one run over partitions.
 */
export interface TopicDef<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly schema: S;
  readonly description: string;
  readonly keyOf: (event: z.infer<S>) => string;
}

function topic<S extends z.ZodType>(
  name: string,
  schema: S,
  keyOf: (event: z.infer<S>) => string,
  description: string,
): TopicDef<S> {
  return { name, schema, keyOf, description };
}

// WARNING: a topic name is a contract with every deployed consumer. A breaking change to an
// event's schema is a NEW topic (".v2") published beside the old one until consumers move;
// never edit a schema here in a way that rejects events an older producer still sends.
export const Topics = {
  runShard: topic(
    'fathom.run.command.v1',
    RunShardCommandSchema,
    (e) => `${e.runId}/${e.shard.index}`,
    'orchestrator -> load-generators (consumer group): shards of a run plan',
  ),
  runControl: topic(
    'fathom.run.control.v1',
    RunControlSchema,
    (e) => e.runId,
    'orchestrator -> every load-generator (one group each): abort a run',
  ),
  runLifecycle: topic(
    'fathom.run.lifecycle.v1',
    RunLifecycleSchema,
    (e) => e.runId,
    'load-generator -> orchestrator, analyzer: shard started / finished / failed, with counts',
  ),
  requestTelemetry: topic(
    'fathom.telemetry.request.v1',
    RequestTelemetrySchema,
    (e) => `${e.runId}/${e.id}`,
    'load-generator -> semantic-monitor, analyzer: sampled per-request records, batched',
  ),
  telemetryWindow: topic(
    'fathom.telemetry.window.v1',
    TelemetryWindowSchema,
    (e) => `${e.runId}/${e.generatorId}`,
    'load-generator -> analyzer: windowed HDR histograms, the primary latency stream',
  ),
  gpuTelemetry: topic(
    'fathom.telemetry.gpu.v1',
    GpuTelemetrySchema,
    (e) => `${e.runId}/${e.source}`,
    'gpu-collector -> analyzer, load-generator (adaptive GPU memory ceiling): normalised GPU and inference-server samples, or a gap',
  ),
  semanticSignal: topic(
    'fathom.signal.semantic.v1',
    SemanticSignalSchema,
    (e) => e.runId,
    'semantic-monitor -> analyzer: token stats per response and detector findings',
  ),
  sloTier: topic(
    'fathom.state.slo-tier.v1',
    SloTierChangeSchema,
    (e) => e.runId,
    'analyzer -> orchestrator: a run changed SLO tier',
  ),
  breaker: topic(
    'fathom.state.breaker.v1',
    BreakerChangeSchema,
    (e) => e.runId,
    'analyzer -> orchestrator, load-generator: a circuit breaker changed state',
  ),
  rootCause: topic(
    'fathom.state.root-cause.v1',
    RootCauseChangeSchema,
    (e) => e.runId,
    'analyzer -> orchestrator, operators: live ranked root causes of a run changed',
  ),
  runReport: topic(
    'fathom.run.report.v1',
    RunReportSchema,
    (e) => e.runId,
    'analyzer -> orchestrator: the run summary once all shards finished',
  ),
  shadowRequest: topic(
    'fathom.shadow.request.v1',
    ShadowRequestSchema,
    (e) => e.id,
    'production traffic tap -> orchestrator (shadow testing): one request to replay, redacted on arrival',
  ),
  shadowControl: topic(
    'fathom.shadow.control.v1',
    ShadowControlSchema,
    (e) => e.campaignId,
    'orchestrator -> orchestrators: a live shadow campaign was stopped; the one running it stops its runner now',
  ),
  deadLetter: topic(
    'fathom.dlq.v1',
    DeadLetterSchema,
    (e) => e.originalTopic,
    'any consumer -> operators: messages that failed validation or their handler',
  ),
} as const;

export type TopicKey = keyof typeof Topics;
export type EventOf<T extends TopicDef> = z.infer<T['schema']>;

/** Every topic name, e.g. for the test broker to create up front. */
export const ALL_TOPIC_NAMES: readonly string[] = Object.values(Topics).map((t) => t.name);

/**
 * `fathom.telemetry.request.v1` as a consumer that validates lazily subscribes to it: the
 * envelope on arrival, the records (up to 200, each with its logprobs) one by one later. The
 * semantic-monitor does so in time slices, because validating a whole message on arrival blocked
 * its event loop up to ~100 ms under load (bench/semantic-keepup); a record that then fails
 * validation dead-letters the whole message, as the bus would have. Same name, same keys.
 */
export const RequestTelemetryEnvelopeSchema = RequestTelemetrySchema.extend({
  records: z.array(z.unknown()).min(1),
});
export type RequestTelemetryEnvelope = z.infer<typeof RequestTelemetryEnvelopeSchema>;
export const requestTelemetryEnvelopeTopic: TopicDef<typeof RequestTelemetryEnvelopeSchema> = {
  ...Topics.requestTelemetry,
  schema: RequestTelemetryEnvelopeSchema,
  keyOf: (e) => `${e.runId}/${e.id}`,
};
