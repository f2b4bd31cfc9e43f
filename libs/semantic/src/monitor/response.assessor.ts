import type { RequestRecord } from '@fathom/contracts';
import {
  assessHallucinationRisk,
  type HallucinationRiskOptions,
  type HeatMapRow,
  type RiskSegment,
} from '../confidence/hallucination-risk.detector';
import {
  PromptExplosionDetector,
  type PromptExplosionOptions,
  type PromptExplosionVerdict,
} from '../prompt/prompt-explosion.detector';

/**
 * What the monitor could judge of one response (same values as `assessment` on the token-stats
 * signal): `ok` logprobs with alternatives; `no-logprobs`/`no-top-logprobs` nothing (or too
 * little) to judge confidence on; `empty` no content; `error` the request failed; `invalid-text`
 * the content holds U+FFFD (bytes that were not UTF-8) or lone surrogates.
 */
export type ResponseAssessmentStatus =
  'ok' | 'no-logprobs' | 'no-top-logprobs' | 'empty' | 'error' | 'invalid-text';

/** Latency objectives one request is held to (the run's SLO, applied per request). */
export interface RequestLatencySlo {
  /** E2E budget per request, ms. */
  readonly e2eMs?: number;
  /** TTFT budget per request, ms. */
  readonly ttftMs?: number;
}

/** P99 <= 800 ms: tier SLO-0 (spec), the budget when a run names none. */
export const DEFAULT_REQUEST_E2E_BUDGET_MS = 800;

export interface ResponseAssessment {
  readonly requestId: string;
  readonly status: ResponseAssessmentStatus;
  readonly meanEntropyBits: number | null;
  readonly maxWindowMeanBits: number | null;
  readonly riskSegments: readonly RiskSegment[];
  /** Per-token confidence (empty without logprobs); a bounded sample of them reaches the report. */
  readonly rows: readonly HeatMapRow[];
  /** Null when no prompt text came with the record (the load-generator did not send it). */
  readonly promptExplosion: PromptExplosionVerdict | null;
  /** Null when the SLO is unknown. */
  readonly latencySloMet: boolean | null;
  /** Named semantic checks that applied to this response, and whether they passed. */
  readonly checks: Record<string, boolean>;
}

export interface ResponseAssessorOptions {
  readonly risk?: HallucinationRiskOptions;
  readonly promptExplosion?: PromptExplosionOptions;
}

/**
 * Judges each response of one run: hallucination risk from the logprobs (every token), prompt
 * explosion from the prompt text (when the record carries it), text validity and the latency
 * SLO. Never throws on a record's content: a malformed one gets a status, not an exception.
 * One instance per run (the prompt baseline is the run's own traffic); not thread-shared.
 */
export class ResponseAssessor {
  private readonly prompts: PromptExplosionDetector;

  constructor(private readonly options: ResponseAssessorOptions = {}) {
    this.prompts = new PromptExplosionDetector(options.promptExplosion);
  }

  assess(record: RequestRecord, slo: RequestLatencySlo | null): ResponseAssessment {
    const checks: Record<string, boolean> = {};
    const failed = record.errorClass !== null || record.status < 200 || record.status >= 300;
    const content = typeof record.content === 'string' ? record.content : '';
    const invalidText = hasInvalidText(content);
    let status: ResponseAssessmentStatus;
    let meanEntropyBits: number | null = null;
    let maxWindowMeanBits: number | null = null;
    let riskSegments: RiskSegment[] = [];
    let rows: HeatMapRow[] = [];
    if (failed) status = 'error';
    else if (content.length === 0 && !record.logprobs?.length) status = 'empty';
    else {
      const report = assessHallucinationRisk(record.logprobs ?? [], this.options.risk);
      meanEntropyBits = finiteOrNull(report.meanEntropyBits);
      maxWindowMeanBits = finiteOrNull(report.maxWindowMeanBits);
      riskSegments = report.segments;
      rows = report.rows;
      status = invalidText ? 'invalid-text' : report.status;
      if (report.status === 'ok') checks['hallucination-risk'] = report.segments.length === 0;
    }
    if (!failed) checks['valid-text'] = !invalidText;
    if (!failed && content.length === 0 && !record.logprobs?.length) checks['non-empty'] = false;

    let promptExplosion: PromptExplosionVerdict | null = null;
    if (typeof record.prompt === 'string' && record.prompt.length > 0) {
      const tokens = record.usage?.promptTokens ?? record.inputTokensClient;
      promptExplosion = this.prompts.observe(record.prompt, tokens);
      checks['prompt-explosion'] = !promptExplosion.exploded;
    }
    return {
      requestId: record.requestId,
      status,
      meanEntropyBits,
      maxWindowMeanBits,
      riskSegments,
      rows,
      promptExplosion,
      latencySloMet: slo === null ? null : latencySloMet(record, slo, failed),
      checks,
    };
  }
}

/**
 * A response with no first-token time (non-streamed: the first token comes with the whole body)
 * is judged by its E2E budget only: the TTFT budget does not apply to it, as the run's TTFT P99
 * objective does not apply to a run that measured no TTFT.
 */
function latencySloMet(record: RequestRecord, slo: RequestLatencySlo, failed: boolean): boolean {
  if (failed) return false;
  if (slo.e2eMs !== undefined && !(record.e2eMs <= slo.e2eMs)) return false;
  if (slo.ttftMs !== undefined && record.ttftMs !== null && !(record.ttftMs <= slo.ttftMs)) return false;
  return true;
}

/** U+FFFD is what a UTF-8 decoder leaves for bytes that were not UTF-8; lone surrogates are broken UTF-16. */
export function hasInvalidText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0xfffd) return true;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

function finiteOrNull(value: number | null): number | null {
  return value === null || !Number.isFinite(value) ? null : value;
}
