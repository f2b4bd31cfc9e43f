import { request } from 'undici';
import {
  assessHallucinationRisk,
  type HallucinationRiskOptions,
} from '../confidence/hallucination-risk.detector';
import {
  scoreAgainstPlantedSpans,
  type ScoredResponse,
  type SpanScore,
} from '../monitor/planted-span.scorer';
import { parseChatStream } from '../stream/parse-chat-stream';

export interface HallucinationProbeOptions {
  /** Base URL of the simulated target (no `/v1`). */
  readonly baseUrl: string;
  readonly requests: number;
  readonly concurrency?: number;
  readonly topLogprobs?: number;
  readonly maxTokens?: number;
  readonly risk?: HallucinationRiskOptions;
}

export interface HallucinationProbeResult {
  readonly score: SpanScore;
  readonly tokens: number;
  /** Wall ms spent in assessHallucinationRisk (parse excluded). */
  readonly assessMs: number;
}

/**
 * Streams chat completions with logprobs from the simulated target, judges each response with
 * `assessHallucinationRisk`, and scores the segments against the target's planted spans, joined
 * by `x-sim-request-id` (the ground truth's `fathomRequestId` is checked against our
 * `x-fathom-request`). Test and benchmark share it.
 */
export async function probeHallucinationRisk(
  options: HallucinationProbeOptions,
): Promise<HallucinationProbeResult> {
  const scored: ScoredResponse[] = [];
  let tokens = 0;
  let assessMs = 0;
  let next = 0;
  const worker = async () => {
    while (next < options.requests) {
      const i = next++;
      const fathomId = `probe-${i}`;
      const res = await request(`${options.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-fathom-request': fathomId },
        body: JSON.stringify({
          model: 'fathom-sim-8b',
          stream: true,
          logprobs: true,
          top_logprobs: options.topLogprobs ?? 5,
          max_tokens: options.maxTokens ?? 64,
          messages: [{ role: 'user', content: `Question ${i}: tell me about topic ${i * 7919}.` }],
        }),
      });
      const simId = String(res.headers['x-sim-request-id']);
      const parsed = parseChatStream(await res.body.text());
      const truthRes = await request(`${options.baseUrl}/sim/requests/${simId}`);
      const truth = (await truthRes.body.json()) as {
        fathomRequestId: string | null;
        hallucinatedSpans: { start: number; end: number }[];
      };
      if (truth.fathomRequestId !== fathomId)
        throw new Error(`ground truth ${simId} belongs to ${truth.fathomRequestId}, not ${fathomId}`);
      const started = performance.now();
      const report = assessHallucinationRisk(parsed.logprobs, options.risk);
      assessMs += performance.now() - started;
      tokens += parsed.logprobs.length;
      scored.push({ flagged: report.segments, planted: truth.hallucinatedSpans });
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
  return { score: scoreAgainstPlantedSpans(scored), tokens, assessMs };
}
