import type { TokenSpan } from '../text/output.generator';

/**
 * Ground truth of one request, served by `GET /sim/requests/:id`. Times: `*EpochMs` are wall
 * epoch ms with sub-ms precision (performance.timeOrigin + performance.now()); `timing` is the
 * engine's model time converted to wall ms (model ms x timeScale).
 */
export interface GroundTruthRecord {
  id: string;
  /** The client's `x-fathom-request` header, for joining with load-generator telemetry. */
  fathomRequestId: string | null;
  /** The client's W3C `traceparent` header as received (its trace and parent span ids), or null. */
  traceparent: string | null;
  endpoint: string;
  model: string;
  stream: boolean;
  status: 'queued' | 'running' | 'finished' | 'aborted' | 'truncated' | 'failed';
  arrivalEpochMs: number;
  promptTokens: number;
  cachedPromptTokens: number;
  completionTokens: number;
  finishReason: string | null;
  timing: {
    queueMs: number | null;
    prefillMs: number | null;
    decodeMs: number | null;
    ttftMs: number | null;
    e2eMs: number | null;
  };
  preemptions: number;
  /** Server-side write time of every token, by token index. */
  tokenEmitEpochMs: number[];
  /** The answer is a refusal (the refusal_rate fault drew it): `refusal` text, `content: null`. */
  refused: boolean;
  /** Planted hallucinated spans as token index ranges [start, end). */
  hallucinatedSpans: TokenSpan[];
  /** Entropy (bits) of each token's planted distribution. */
  tokenEntropyBits: number[];
  /** Fault kinds active when the request arrived. */
  faults: string[];
}

/** Bounded map of records; the oldest is dropped when full. */
export class GroundTruthStore {
  private readonly records = new Map<string, GroundTruthRecord>();

  constructor(private readonly capacity: number) {}

  put(record: GroundTruthRecord): void {
    this.records.set(record.id, record);
    if (this.records.size > this.capacity) {
      const oldest = this.records.keys().next().value;
      if (oldest !== undefined) this.records.delete(oldest);
    }
  }

  get(id: string): GroundTruthRecord | undefined {
    return this.records.get(id);
  }

  get size(): number {
    return this.records.size;
  }
}
