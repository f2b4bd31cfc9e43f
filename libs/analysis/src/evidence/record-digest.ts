import {
  stepRoute,
  type CampaignSpec,
  type RequestRecord,
  type Step,
  type ToolCallObservation,
} from '@fathom/contracts';
import {
  assessHallucinationRisk,
  checkShapeAgainstSchema,
  declaredToolContracts,
  type DeclaredToolContract,
} from '@fathom/semantic';

/** The layers a request path belongs to: breakers and root causes are kept per layer. */
export type Layer = 'llm' | 'embed' | 'retrieve' | 'rerank' | 'index' | `tool:${string}` | 'agent' | 'http';

/** One call on one layer inside a request (an HTTP DAG iteration or a tool chain has several). */
export interface LayerCall {
  readonly layer: Layer;
  /** The path as the load-generator sends it. */
  readonly path: string;
  readonly ok: boolean;
  /** HTTP status of the call, 0 when it never got one or it is not known separately. */
  readonly status: number;
  /** Why it failed, when it did (first 160 characters). */
  readonly error?: string;
  /** The refusal's `Retry-After` header in seconds (`RequestRecord.retryAfterS`), when it had one. */
  readonly retryAfterS?: number;
  /** An assertion on the response failed (the contract, not the transport). */
  readonly assertionFailed?: boolean;
}

/**
 * The compact view of one request record the analyzer keeps (a record is kilobytes, a digest
 * about a hundred bytes). Stored per telemetry batch so a report can be rebuilt after a restart.
 */
export interface RecordDigest {
  /**
   * The record's id (joins the semantic-monitor's token-stats signal), its HTTP status, E2E from
   * the intended send time and input tokens: for the report's per-request rows. Optional: absent
   * on digests stored before.
   */
  readonly requestId?: string;
  readonly status?: number;
  readonly correctedE2eMs?: number;
  readonly inputTokens?: number;
  /** The target's `x-request-id` and the trace id sent, to join the target's logs and traces. */
  readonly serverRequestId?: string;
  readonly traceId?: string;
  /** Epoch ms when the request ended (actual start + E2E). */
  readonly at: number;
  readonly startedAt: number;
  /** Actual start minus intended start (ms): the generator's own lateness. */
  readonly lateMs: number;
  readonly ok: boolean;
  readonly errorClass: string | null;
  readonly e2eMs: number;
  readonly ttftMs: number | null;
  /** Longest gap between content chunks (ms), null with fewer than two chunks. */
  readonly gapMaxMs: number | null;
  /** Median gap between content chunks (ms). */
  readonly gapMedianMs: number | null;
  /** Server-reported minus client-counted output tokens; null without usage. */
  readonly tokenMismatch: number | null;
  readonly outputTokens: number;
  /** Hallucination-risk segments in the response; null without top logprobs. */
  readonly riskSegments: number | null;
  readonly maxWindowEntropyBits: number | null;
  readonly calls: readonly LayerCall[];
  /**
   * The tool calls the record carries (`RequestRecord.toolCalls`), each judged against the
   * campaign's declared contract of its version. Absent on records without tool calls and on
   * digests stored before tool contracts existed.
   */
  readonly toolCalls?: readonly ToolCallDigest[];
  /** A multi-agent workflow as the driver judged it from the steps it saw; absent elsewhere. */
  readonly workflow?: WorkflowDigest;
}

/** The driver's verdict on one multi-agent workflow (`content.observed` of an agents record). */
export interface WorkflowDigest {
  readonly verdict: 'converged' | 'oscillating' | 'deadlock' | 'undecided';
  readonly steps: number;
  /** Share of agent moves that came back to the intent of two steps before. */
  readonly recurrence: number;
  /** The spec's oscillation score (std-dev of the intent change x mean action probability). */
  readonly oscillationScore: number;
  readonly meanActionProbability: number;
  /** Agents on the wait-for cycle the workflow ended on. */
  readonly waitForCycle: readonly string[];
}

/** One tool call of a request, as the root-cause engine weighs schema drift. */
export interface ToolCallDigest {
  readonly tool: string;
  /** The version that answered, as recorded (`v1.9`; compare with `normalizeToolVersion`). */
  readonly version: string;
  /**
   * The answer kept the declared response contract of its version: false on a violation (or a
   * non-JSON body where JSON is declared), null when nothing is declared for the version, the
   * contract is unusable, or the call had no answer to judge (failed, no response, too large).
   */
  readonly contractPassed: boolean | null;
  /** This call went to the fallback instance. */
  readonly fallback: boolean;
  /** This main-path call was replaced by a fallback call. */
  readonly fallbackTriggered: boolean;
}

/** Which layer a request path belongs to. */
export function layerOfPath(path: string): Layer {
  const p = path.toLowerCase();
  if (p.includes('/rerank')) return 'rerank';
  if (p.includes('/retrieve') || p.includes('/search')) return 'retrieve';
  if (p.includes('/index')) return 'index';
  if (p.includes('/embeddings')) return 'embed';
  if (p.includes('/chat/completions') || p.endsWith('/completions')) return 'llm';
  const tool = /\/tools\/([\w-]+)/.exec(p);
  if (tool) return `tool:${tool[1]}`;
  if (p.includes('/agents')) return 'agent';
  return 'http';
}

/** An HTTP step's path under the target's base path; a gRPC or WebSocket step's own route. */
function stepEvidencePath(baseUrl: string, step: Step): string {
  return step.kind === 'grpc' || step.kind === 'websocket' ? stepRoute(step) : joinPath(baseUrl, step.path);
}

function joinPath(baseUrl: string, suffix: string): string {
  const base = new URL(baseUrl).pathname.replace(/\/$/, '');
  return `${base}${suffix}`;
}

function originPath(suffix: string): string {
  return suffix;
}

function excerpt(text: string | undefined): string | undefined {
  return text === undefined ? undefined : text.slice(0, 160);
}

/** Which calls a record stands for, from the campaign's scenario and the record's outcome. */
export function layerCalls(record: RequestRecord, spec: CampaignSpec): LayerCall[] {
  const scenario = spec.scenario;
  const ok = record.errorClass === null;
  const error = excerpt(record.errorMessage);
  if (scenario.type === 'chat') {
    const path = joinPath(
      spec.target.baseUrl,
      scenario.endpoint === 'chat' ? '/chat/completions' : '/completions',
    );
    return [{ layer: 'llm', path, ok, status: record.status, ...(ok ? {} : { error }) }];
  }
  if (scenario.type === 'embeddings') {
    return [
      {
        layer: 'embed',
        path: joinPath(spec.target.baseUrl, '/embeddings'),
        ok,
        status: record.status,
        ...(ok ? {} : { error }),
      },
    ];
  }
  if (scenario.type === 'http') {
    if (ok)
      return scenario.steps.map((s) => ({
        layer: layerOfPath(stepRoute(s)),
        path: stepEvidencePath(spec.target.baseUrl, s),
        ok: true,
        status: record.status,
      }));
    // The driver names the first failing step: "step <name>: <why>".
    const named = /^step ([\w-]+): (.*)$/s.exec(record.errorMessage ?? '');
    const step = named ? scenario.steps.find((s) => s.name === named[1]) : undefined;
    if (!step)
      return [{ layer: 'http', path: '', ok: false, status: record.status, ...(error ? { error } : {}) }];
    const assertionFailed = /^assertion /.test(named![2]);
    return [
      {
        layer: layerOfPath(stepRoute(step)),
        path: stepEvidencePath(spec.target.baseUrl, step),
        ok: false,
        status: record.status,
        error: excerpt(named![2]),
        ...(assertionFailed ? { assertionFailed } : {}),
      },
    ];
  }
  if (scenario.type !== 'tool-chain') {
    // Scenarios added after this was written (e.g. a RAG layer scenario): its `layer`/`path` if any.
    const other = scenario as { layer?: string; path?: string };
    const path = other.path ?? (other.layer ? `/rag/${other.layer}` : '');
    const layer = other.layer && !other.path ? layerOfPath(`/rag/${other.layer}`) : layerOfPath(path);
    return [{ layer, path, ok, status: record.status, ...(ok ? {} : { error }) }];
  }
  // tool-chain: "tool <name>: HTTP n" names a failed tool call, anything else is the model's step.
  const llm = joinPath(spec.target.baseUrl, '/chat/completions');
  const tool = /^tool ([\w-]+): (.*)$/s.exec(record.errorMessage ?? '');
  if (!ok && tool) {
    const def = scenario.tools.find((t) => t.name === tool[1]);
    return [
      { layer: 'llm', path: llm, ok: true, status: 200 },
      {
        layer: `tool:${tool[1]}`,
        path: originPath(def?.invokePath ?? `/tools/${tool[1]}`),
        ok: false,
        status: record.status,
        error: excerpt(tool[2]),
      },
    ];
  }
  return [{ layer: 'llm', path: llm, ok, status: record.status, ...(ok ? {} : { error }) }];
}

/** The record's `Retry-After` belongs to its failed call (a record fails on one call at most). */
function withRetryAfter(calls: LayerCall[], retryAfterS: number | undefined): LayerCall[] {
  if (retryAfterS === undefined) return calls;
  return calls.map((c) => (c.ok ? c : { ...c, retryAfterS }));
}

function gapStats(offsets: readonly number[]): { max: number | null; median: number | null } {
  if (offsets.length < 2) return { max: null, median: null };
  const gaps: number[] = [];
  for (let i = 1; i < offsets.length; i++) gaps.push(offsets[i] - offsets[i - 1]);
  gaps.sort((a, b) => a - b);
  return { max: gaps[gaps.length - 1], median: gaps[Math.floor(gaps.length / 2)] };
}

/** Compiled once per scenario: every record of a run shares its spec object. */
const declaredByScenario = new WeakMap<CampaignSpec['scenario'], Map<string, DeclaredToolContract>>();

/**
 * The same verdict as the semantic-monitor's tool-contract watch (`contractPassed` of its pass
 * rate), from the same `@fathom/semantic` checks, so the analyzer can weigh drift while the run
 * goes: the monitor's per-version rates arrive only with its end-of-run goodput summary.
 */
export function judgeToolCalls(calls: readonly ToolCallObservation[], spec: CampaignSpec): ToolCallDigest[] {
  let declared = declaredByScenario.get(spec.scenario);
  if (!declared) declaredByScenario.set(spec.scenario, (declared = declaredToolContracts(spec.scenario)));
  return calls.map((call) => {
    const contract = declared.get(call.tool)?.forVersion(call.version) ?? null;
    let contractPassed: boolean | null = null;
    const answered = call.status < 300 && call.body !== 'no-response' && call.body !== 'too-large';
    if (contract?.ok && answered) {
      contractPassed =
        call.shape === undefined
          ? false
          : checkShapeAgainstSchema(contract.schema, call.shape, contract.root).violations.length === 0;
    }
    return {
      tool: call.tool,
      version: call.version,
      contractPassed,
      fallback: call.fallback === true,
      fallbackTriggered: call.fallbackTriggered === true,
    };
  });
}

/** The observed verdict an agents record carries in its content, or undefined. */
export function workflowDigestOf(content: string): WorkflowDigest | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return undefined;
  }
  const o = (parsed as { observed?: Record<string, unknown> } | null)?.observed;
  if (typeof o !== 'object' || o === null) return undefined;
  const verdicts = ['converged', 'oscillating', 'deadlock', 'undecided'] as const;
  const verdict = verdicts.find((v) => v === o.verdict);
  if (!verdict) return undefined;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return {
    verdict,
    steps: num(o.steps),
    recurrence: num(o.recurrence),
    oscillationScore: num(o.oscillationScore),
    meanActionProbability: num(o.meanActionProbability),
    waitForCycle: Array.isArray(o.waitForCycle)
      ? o.waitForCycle.filter((a): a is string => typeof a === 'string').slice(0, 16)
      : [],
  };
}

/** Digests one record; the hallucination verdict uses the spec's entropy bands (@fathom/semantic). */
export function digestRecord(record: RequestRecord, spec: CampaignSpec): RecordDigest {
  const gaps = gapStats(record.chunkOffsetsMs);
  let riskSegments: number | null = null;
  let maxWindowEntropyBits: number | null = null;
  if (record.logprobs?.length) {
    const risk = assessHallucinationRisk(record.logprobs);
    if (risk.status === 'ok') {
      riskSegments = risk.segments.length;
      maxWindowEntropyBits = risk.maxWindowMeanBits;
    }
  }
  return {
    requestId: record.requestId,
    ...(record.serverRequestId ? { serverRequestId: record.serverRequestId } : {}),
    ...(record.traceId ? { traceId: record.traceId } : {}),
    status: record.status,
    correctedE2eMs: record.correctedE2eMs,
    inputTokens: record.usage?.promptTokens ?? record.inputTokensClient,
    at: record.startedAt + record.e2eMs,
    startedAt: record.startedAt,
    lateMs: Math.max(0, record.startedAt - record.scheduledAt),
    ok: record.errorClass === null,
    errorClass: record.errorClass,
    e2eMs: record.e2eMs,
    ttftMs: record.ttftMs,
    gapMaxMs: gaps.max,
    gapMedianMs: gaps.median,
    tokenMismatch: record.usage ? record.usage.completionTokens - record.outputTokensClient : null,
    outputTokens: record.outputTokensClient,
    riskSegments,
    maxWindowEntropyBits,
    calls: withRetryAfter(layerCalls(record, spec), record.retryAfterS),
    ...(record.toolCalls?.length ? { toolCalls: judgeToolCalls(record.toolCalls, spec) } : {}),
    ...workflowOf(record, spec),
  };
}

function workflowOf(record: RequestRecord, spec: CampaignSpec): { workflow?: WorkflowDigest } {
  if (spec.scenario.type !== 'agents') return {};
  const workflow = workflowDigestOf(record.content);
  return workflow ? { workflow } : {};
}
