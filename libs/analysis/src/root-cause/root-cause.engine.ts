import { Detectors, type RootCauseCause } from '@fathom/contracts';
import { DEFAULT_BANDWIDTH_SATURATION_THRESHOLD } from '@fathom/gpu';
import {
  gpuCounterIncrease,
  gpuMax,
  gpuMean,
  type RunTimeline,
  type SpanView,
} from '../evidence/run-timeline';
import type { LayerCall, RecordDigest } from '../evidence/record-digest';
import {
  schemaDriftFindings,
  toolContractRatesFromSummary,
  toolVersionKey,
  type SchemaDriftFinding,
} from '../evidence/tool-drift';

export interface RootCauseOptions {
  /** The first part of a run is ramp-up and not a baseline (ms). */
  readonly warmupMs: number;
  /** Length of the baseline span after warm-up (ms). */
  readonly baselineMs: number;
  /** The recent span judged against the baseline (ms). */
  readonly recentMs: number;
  /** P99 budget (ms): the campaign's, else tier SLO-0's 800 ms (spec). */
  readonly p99BudgetMs: number;
  /** A hop "jumped" when its figure grew by this factor over the baseline. */
  readonly jumpFactor: number;
  /** A gap between tokens at least this long (ms) is a stall, whatever the baseline. */
  readonly stallMs: number;
}

export const DEFAULT_ROOT_CAUSE_OPTIONS: RootCauseOptions = {
  warmupMs: 2_000,
  baselineMs: 2_000,
  recentMs: 3_000,
  // P99 <= 800 ms: tier SLO-0 (spec)
  p99BudgetMs: 800,
  jumpFactor: 2,
  stallMs: 500,
};

const ms = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(1)} ms`);
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const iso = (t: number) => new Date(t).toISOString();

function range(digests: readonly RecordDigest[], fallback: SpanView): { since: number; until: number } {
  if (!digests.length) return { since: fallback.fromMs, until: fallback.toMs };
  return {
    since: Math.min(...digests.map((d) => d.startedAt)),
    until: Math.max(...digests.map((d) => d.at)),
  };
}

function ratio(recent: number | null, base: number | null): number | null {
  if (recent === null || base === null || base <= 0) return null;
  return recent / base;
}

/**
 * The spec's root-cause flow over a recent span against the run's own baseline:
 *   P99 over budget (or jumped)? -> which hop jumped: first hop (TTFT: queueing and prefill) or
 *   decode (inter-token latency) -> SM heat map -> DRAM bandwidth saturated?
 *   otherwise -> token-stream interruption rate -> stalls / truncations -> DRAM saturated?
 * and the layer-level faults the flow does not cover (reranker busy, tool contract drift, RAG
 * query/document mismatch, agents that oscillate or deadlock, a rise of hallucination risk, server
 * errors, prompt explosion). Returns causes ranked by confidence, each with its
 * evidence, figures, time range and advice. Pure: the same timeline gives the same causes.
 */
export function diagnose(
  timeline: RunTimeline,
  nowMs: number,
  options: RootCauseOptions = DEFAULT_ROOT_CAUSE_OPTIONS,
): RootCauseCause[] {
  const start = timeline.startMs;
  if (start === null) return [];
  const baselineFrom = start + options.warmupMs;
  const baselineTo = baselineFrom + options.baselineMs;
  // Ramp-up (connections, JIT, first scrapes) is neither baseline nor evidence.
  const recentFrom = Math.max(baselineFrom, nowMs - options.recentMs);
  if (recentFrom >= nowMs) return [];
  const recent = timeline.span(recentFrom, nowMs);
  const hasBaseline = recentFrom >= baselineTo;
  const base = hasBaseline ? timeline.span(baselineFrom, baselineTo) : null;
  const causes: RootCauseCause[] = [];

  // GPU context shared by the flow's branches.
  const dram = gpuMax(recent.gpu, 'dram_active_ratio');
  const sm = gpuMean(recent.gpu, 'sm_active_ratio') ?? gpuMean(recent.gpu, 'gpu_util_pct') ?? null;
  const dramSaturated = dram !== null && dram > DEFAULT_BANDWIDTH_SATURATION_THRESHOLD;
  const gpuLines = [
    `SM heat map, recent mean: ${sm === null ? 'no SM reading' : sm > 1 ? `${sm.toFixed(0)} % util` : `${(sm * 100).toFixed(0)} % SM active`}`,
    dram === null
      ? 'DRAM bandwidth: no DCGM reading'
      : `DRAM active peak ${(dram * 100).toFixed(0)} % ${dramSaturated ? '>' : '<='} ${DEFAULT_BANDWIDTH_SATURATION_THRESHOLD * 100} %: ${dramSaturated ? 'bandwidth-bound' : 'not bandwidth-bound'}`,
  ];
  const gpuFigures: Record<string, number> = {
    ...(dram !== null ? { dramActivePeak: dram } : {}),
    ...(sm !== null ? { smActiveMean: sm } : {}),
  };

  // 1. P99 over budget, or jumped against the baseline.
  const p99 = recent.latency.e2e.p99;
  const p99Base = base?.latency.e2e.p99 ?? null;
  const p99Jump = ratio(p99, p99Base);
  const overBudget =
    p99 !== null && (p99 > options.p99BudgetMs || (p99Jump !== null && p99Jump >= options.jumpFactor));
  const flowHead = `P99 ${ms(p99)} (baseline ${ms(p99Base)}, budget ${options.p99BudgetMs} ms)`;

  // KV-cache pressure: the first hop (queue + prefill) grows because blocks run out.
  const kvMax = gpuMax(recent.gpu, 'kv_cache_usage_ratio');
  const preemptions = gpuCounterIncrease(recent.gpu, 'preemptions_total');
  const waiting = gpuMean(recent.gpu, 'requests_waiting');
  const ttft = recent.latency.ttft.p99;
  const ttftBase = base?.latency.ttft.p99 ?? null;
  const ttftJump = ratio(ttft, ttftBase);
  const itl = recent.latency.itl.p50;
  const itlBase = base?.latency.itl.p50 ?? null;
  const itlJump = ratio(itl, itlBase);
  const kvPressure = kvMax !== null && kvMax >= 0.9 && ((preemptions ?? 0) > 0 || (waiting ?? 0) >= 1);
  if (kvPressure) {
    const confidence = Math.min(
      1,
      0.55 +
        ((preemptions ?? 0) > 0 ? 0.2 : 0) +
        (overBudget ? 0.15 : 0) +
        ((ttftJump ?? 0) >= options.jumpFactor ? 0.1 : 0),
    );
    causes.push({
      kind: 'kv-cache-pressure',
      title: 'KV cache exhausted: requests wait for blocks and running sequences are preempted',
      confidence,
      since: recent.fromMs,
      until: recent.toMs,
      evidence: [
        flowHead,
        `first hop (TTFT P99) ${ms(ttft)} vs baseline ${ms(ttftBase)}`,
        `KV-cache usage peak ${(kvMax! * 100).toFixed(0)} %, ${preemptions ?? 0} preemptions, ${(waiting ?? 0).toFixed(1)} requests waiting on average`,
        ...gpuLines,
        `between ${iso(recent.fromMs)} and ${iso(recent.toMs)}`,
      ],
      figures: {
        kvUsagePeak: kvMax!,
        preemptions: preemptions ?? 0,
        waitingMean: waiting ?? 0,
        ...(ttft !== null ? { ttftP99Ms: ttft } : {}),
        ...(ttftBase !== null ? { ttftP99BaselineMs: ttftBase } : {}),
        ...gpuFigures,
      },
      advice: [
        'give the server more KV cache (raise --gpu-memory-utilization, lower --max-model-len, or a larger GPU)',
        'lower the max batch (--max-num-seqs) so admitted sequences fit in the cache without preemption',
        'turn prefix caching on (--enable-prefix-caching) so shared prompt prefixes reuse blocks',
      ],
    });
  }

  // Decode slowed down (engine step time): the hop that jumped is inter-token latency.
  if (
    !kvPressure &&
    overBudget &&
    itlJump !== null &&
    itlJump >= options.jumpFactor &&
    itl !== null &&
    itlBase !== null &&
    itl - itlBase >= 5
  ) {
    const bandwidth = dramSaturated;
    causes.push({
      kind: bandwidth ? 'dram-bandwidth-saturation' : 'engine-step-slowdown',
      title: bandwidth
        ? 'decode is memory-bandwidth bound: DRAM saturated'
        : 'every engine step got slower (decode latency jumped) without KV pressure or bandwidth saturation',
      confidence: Math.min(1, 0.5 + 0.1 * Math.min(4, itlJump)),
      since: recent.fromMs,
      until: recent.toMs,
      evidence: [
        flowHead,
        `hop that jumped: decode, inter-token latency P50 ${ms(itl)} vs baseline ${ms(itlBase)} (x${itlJump.toFixed(1)})`,
        `first hop (TTFT P99) ${ms(ttft)} vs baseline ${ms(ttftBase)}`,
        ...gpuLines,
        `between ${iso(recent.fromMs)} and ${iso(recent.toMs)}`,
      ],
      figures: {
        itlP50Ms: itl,
        itlP50BaselineMs: itlBase,
        itlJump,
        ...(p99 !== null ? { e2eP99Ms: p99 } : {}),
        ...gpuFigures,
      },
      advice: bandwidth
        ? [
            'lower the max batch (--max-num-seqs): fewer sequences read less KV per step',
            'quantise the KV cache (fp8) to halve the bytes read per token',
          ]
        : [
            'compare the SM heat map with the baseline: a co-tenant, throttling (clocks, power) or a slower kernel build explains a uniform step-time rise',
            'lower the max batch (--max-num-seqs) to bring inter-token latency back under budget',
          ],
    });
  }

  // 2. Token-stream interruption: stalls (long gaps), truncations, malformed events.
  const streamed = recent.digests.filter((d) => d.gapMaxMs !== null);
  const baseGap = base
    ? median(base.digests.map((d) => d.gapMedianMs).filter((g): g is number => g !== null))
    : null;
  const stallBound = Math.max(options.stallMs, baseGap !== null ? 20 * baseGap : 0);
  const stalled = streamed.filter((d) => (d.gapMaxMs ?? 0) >= stallBound);
  const interrupted = recent.digests.filter(
    (d) => d.errorClass === 'stream-truncated' || d.errorClass === 'malformed-sse',
  );
  // A paused client (the generator's own event loop blocked) stalls every stream and the first
  // token alike; a server-side stall leaves TTFT alone. Stalls are judged against a baseline only.
  const clientPaused = ttftJump !== null && ttftJump >= options.jumpFactor;
  if (
    hasBaseline &&
    !clientPaused &&
    streamed.length >= 5 &&
    stalled.length >= 3 &&
    stalled.length / streamed.length >= 0.2
  ) {
    const share = stalled.length / streamed.length;
    const worst = Math.max(...stalled.map((d) => d.gapMaxMs ?? 0));
    causes.push({
      kind: 'stream-stall',
      title: 'token streams stall mid-response (output buffer not flushed)',
      confidence: Math.min(1, 0.55 + 0.4 * share),
      ...range(stalled, recent),
      evidence: [
        overBudget
          ? `${flowHead}: no hop's latency jumped (TTFT P99 ${ms(ttft)}, ITL P50 ${ms(itl)})`
          : flowHead,
        `token-stream interruption: ${stalled.length}/${streamed.length} responses (${pct(share)}) paused >= ${stallBound.toFixed(0)} ms, longest ${worst.toFixed(0)} ms (baseline gap median ${ms(baseGap)})`,
        ...gpuLines,
      ],
      figures: {
        stalledResponses: stalled.length,
        streamedResponses: streamed.length,
        stallShare: share,
        longestGapMs: worst,
        ...gpuFigures,
      },
      advice: [
        'look for output-stream buffer overflow or a proxy that buffers SSE (disable proxy buffering, flush per chunk)',
        'check the server for pauses between decode steps (GC, CPU contention on the API process, scheduler starvation)',
      ],
    });
  }
  if (recent.digests.length >= 5 && interrupted.length / recent.digests.length >= 0.05) {
    const share = interrupted.length / recent.digests.length;
    causes.push({
      kind: 'stream-interruption',
      title: 'token streams end early or carry malformed events',
      confidence: Math.min(1, 0.5 + share / 2),
      ...range(interrupted, recent),
      evidence: [
        `${interrupted.length}/${recent.digests.length} responses (${pct(share)}) truncated or malformed`,
        ...gpuLines,
      ],
      figures: { interrupted: interrupted.length, responses: recent.digests.length, share },
      advice: [
        'check for connection resets between the client and the server (load balancer idle timeouts, proxy limits)',
      ],
    });
  }

  // Layer faults.
  const calls = recent.digests.flatMap((d) =>
    d.calls.map((c) => ({ ...c, at: d.at, startedAt: d.startedAt })),
  );
  const rerank = calls.filter((c) => c.layer === 'rerank');
  const rerankBusy = rerank.filter((c) => !c.ok && (c.status === 503 || /busy/i.test(c.error ?? '')));
  if (rerank.length >= 5 && rerankBusy.length / rerank.length >= 0.2) {
    const share = rerankBusy.length / rerank.length;
    causes.push({
      kind: 'reranker-saturation',
      title: 'reranker saturated: its concurrency cap refuses requests ("reranker busy")',
      confidence: Math.min(1, 0.6 + 0.4 * share),
      since: Math.min(...rerankBusy.map((c) => c.startedAt)),
      until: Math.max(...rerankBusy.map((c) => c.at)),
      evidence: [
        `${rerankBusy.length}/${rerank.length} rerank calls (${pct(share)}) refused with 503 busy`,
        `example: ${rerankBusy[0].error ?? 'HTTP 503'}`,
      ],
      figures: { refused: rerankBusy.length, calls: rerank.length, share },
      advice: [
        "lower the callers' rerank concurrency below the cap (spec: semaphore of 32) or queue instead of failing fast",
        'add reranker replicas, or rerank fewer candidates per query (smaller top_n input)',
      ],
    });
  }

  // Multi-agent workflows (spec, anomaly class 5): oscillating intent graphs or wait-for cycles.
  const agent = calls.filter((c) => c.layer === 'agent');
  const stuck = agent.filter((c) => !c.ok && /^workflow (oscillating|deadlock)\b/.test(c.error ?? ''));
  if (agent.length >= 5 && stuck.length / agent.length >= 0.2) {
    const share = stuck.length / agent.length;
    const deadlocks = stuck.filter((c) => c.error!.startsWith('workflow deadlock'));
    const oscillating = stuck.length - deadlocks.length;
    const deadlocked = deadlocks.length > oscillating;
    causes.push({
      kind: deadlocked ? 'agent-deadlock' : 'agent-oscillation',
      title: deadlocked
        ? 'agents deadlock: workflows end in a wait-for cycle over shared resources'
        : "agents oscillate: workflows' intent graphs keep changing instead of converging",
      confidence: Math.min(1, 0.55 + 0.45 * share),
      since: Math.min(...stuck.map((c) => c.startedAt)),
      until: Math.max(...stuck.map((c) => c.at)),
      evidence: [
        `${stuck.length}/${agent.length} workflows (${pct(share)}) did not converge: ${oscillating} oscillating, ${deadlocks.length} deadlocked`,
        `example: ${(deadlocked ? deadlocks[0] : stuck.find((c) => !c.error!.startsWith('workflow deadlock'))!).error}`,
      ],
      figures: { workflows: agent.length, oscillating, deadlocked: deadlocks.length, share },
      advice: deadlocked
        ? [
            'acquire shared resources in one global order, or with timeouts, so no wait-for cycle can form',
            'fewer agents competing for the same resource per workflow',
          ]
        : [
            'prune low-confidence branches with a pressure coefficient (spec: lambda 0.05 prunes ~47 % and relieves in ~320 ms)',
            'cap the steps per workflow and fall back to one agent when the intent change does not shrink',
          ],
    });
  }

  const drift = toolSchemaDrift(timeline, recent, base, nowMs, calls);
  if (drift) causes.push(drift);

  const mismatch = retrievalMismatch(timeline, nowMs);
  if (mismatch) causes.push(mismatch);

  const judged = recent.digests.filter((d) => d.riskSegments !== null);
  const baseJudged = base ? base.digests.filter((d) => d.riskSegments !== null) : [];
  if (judged.length >= 5) {
    const share = judged.filter((d) => (d.riskSegments ?? 0) > 0).length / judged.length;
    const baseShare =
      baseJudged.length >= 5
        ? baseJudged.filter((d) => (d.riskSegments ?? 0) > 0).length / baseJudged.length
        : null;
    const rise = baseShare === null ? null : share - baseShare;
    if ((rise !== null && rise >= 0.3) || (baseShare === null && share >= 0.6)) {
      const risky = judged.filter((d) => (d.riskSegments ?? 0) > 0);
      causes.push({
        kind: 'hallucination-rise',
        title: 'the share of responses with high-entropy (hallucination-risk) segments rose',
        confidence: Math.min(1, 0.5 + (rise ?? share - 0.2)),
        ...range(risky, recent),
        evidence: [
          `${risky.length}/${judged.length} responses (${pct(share)}) carry a risk segment (window mean entropy above ~2.9 bits), baseline ${baseShare === null ? 'n/a' : pct(baseShare)}`,
          `peak window mean entropy ${Math.max(...risky.map((d) => d.maxWindowEntropyBits ?? 0)).toFixed(2)} bits (spec: facts ~2.1, hallucinated ~4.8 bits)`,
        ],
        figures: {
          riskyShare: share,
          ...(baseShare !== null ? { baselineShare: baseShare } : {}),
          judged: judged.length,
        },
        advice: [
          'lower the sampling temperature and ground answers in retrieved context',
          'gate answers on the sliding-window entropy: regenerate or abstain on a risk segment',
        ],
      });
    }
  }

  const llm = calls.filter((c) => c.layer === 'llm');
  const serverErrors = llm.filter((c) => !c.ok && c.status >= 500);
  if (llm.length >= 5 && serverErrors.length / llm.length >= 0.1) {
    const share = serverErrors.length / llm.length;
    causes.push({
      kind: 'server-errors',
      title: 'the inference server answers with 5xx errors',
      confidence: Math.min(1, 0.5 + share / 2),
      since: Math.min(...serverErrors.map((c) => c.startedAt)),
      until: Math.max(...serverErrors.map((c) => c.at)),
      evidence: [
        `${serverErrors.length}/${llm.length} completions (${pct(share)}) failed with 5xx`,
        `example: ${serverErrors[0].error ?? ''}`,
      ],
      figures: { failed: serverErrors.length, calls: llm.length, share },
      advice: [
        'read the server log for the failing requests; check health checks and restarts of the engine',
      ],
    });
  }

  const explosions = recent.detectors.filter((s) => s.detector === Detectors.promptExplosion);
  if (explosions.length) {
    causes.push({
      kind: 'prompt-explosion',
      title: 'prompts exceed the nesting depth or token surge bounds',
      confidence: Math.min(1, 0.5 + 0.05 * explosions.length),
      since: Math.min(...explosions.map((s) => s.emittedAt)),
      until: Math.max(...explosions.map((s) => s.emittedAt)),
      evidence: explosions.slice(0, 3).map((s) => s.message),
      figures: { signals: explosions.length },
      advice: [
        'cap nesting depth (<= 5) and prompt tokens (<= 3x the P95 baseline) before the model sees them',
      ],
    });
  }

  return causes.sort((a, b) => b.confidence - a.confidence);
}

/** Confidence of a drift whose changes break no reader (an added field): named, ranked low. */
const NON_BREAKING_DRIFT_CONFIDENCE = 0.35;
/** Drifted paths spelled out per tool version in a cause's evidence. */
const DRIFT_PATHS_IN_EVIDENCE = 8;

/**
 * Tool schema drift (spec, anomaly class 4) from both kinds of evidence:
 * - the semantic-monitor's `schema-drift` signals (a declared contract against the answers: tool,
 *   version, path, change), weighed by how many answers of that version broke their contract
 *   in the recent span (the analyzer's own verdicts on the records' tool calls; the monitor's
 *   run-wide pass rate when no recent answer was judged). A breaking drift whose recent answers
 *   all pass again is over and not named anew;
 * - failed response assertions of HTTP steps on a tool against the baseline (contracts that are
 *   asserted, not declared).
 * One cause: the stronger evidence sets the confidence, both are listed.
 */
function toolSchemaDrift(
  timeline: RunTimeline,
  recent: SpanView,
  base: SpanView | null,
  nowMs: number,
  calls: readonly (LayerCall & { at: number; startedAt: number })[],
): RootCauseCause | null {
  const evidence: string[] = [];
  const figures: Record<string, number> = {};
  const titles: string[] = [];
  let confidence = 0;
  let since = Infinity;
  let until = -Infinity;

  // Drift signals, grouped by tool version.
  const findings = schemaDriftFindings(timeline.detectors.filter((s) => s.emittedAt <= nowMs));
  const groups = new Map<string, SchemaDriftFinding[]>();
  for (const f of findings) {
    const key = toolVersionKey(f.tool, f.version);
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const runWide = new Map(
    toolContractRatesFromSummary(timeline.detectors).map((r) => [toolVersionKey(r.tool, r.version), r]),
  );
  const recentS = ((recent.toMs - recent.fromMs) / 1000).toFixed(1);
  for (const [key, paths] of groups) {
    const { tool, version } = paths[0];
    const answers = recent.digests.flatMap((d) =>
      (d.toolCalls ?? [])
        .filter((c) => toolVersionKey(c.tool, c.version) === key)
        .map((c) => ({ ...c, at: d.at, startedAt: d.startedAt })),
    );
    const judged = answers.filter((c) => c.contractPassed !== null);
    const broken = judged.filter((c) => c.contractPassed === false);
    const wide = runWide.get(key);
    const brokenShare = judged.length
      ? broken.length / judged.length
      : wide?.contractPassRate != null
        ? 1 - wide.contractPassRate
        : null;
    const breaking = paths.filter((p) => p.breaking);
    // A breaking drift no recent answer shows any more is over; one with no answer to judge
    // stands on the signal (at least the answer that raised it broke).
    if (breaking.length && brokenShare === 0) continue;
    const score = breaking.length ? 0.6 + 0.4 * (brokenShare ?? 0) : NON_BREAKING_DRIFT_CONFIDENCE;
    confidence = Math.max(confidence, score);
    const name = `${tool} ${version}`;
    titles.push(`${name} (${[...new Set(paths.map((p) => `${p.path} ${p.change}`))].join(', ')})`);
    evidence.push(
      judged.length
        ? `${name}: ${broken.length}/${judged.length} answers in the last ${recentS} s (${pct(brokenShare!)}) break the declared contract (contract pass rate ${pct(1 - brokenShare!)})`
        : `${name}: no answer judged in the last ${recentS} s${brokenShare !== null ? `; run-wide contract pass rate ${pct(1 - brokenShare)} (semantic-monitor)` : ''}`,
    );
    for (const p of paths.slice(0, DRIFT_PATHS_IN_EVIDENCE))
      evidence.push(`${name} ${p.path} ${p.change}${p.breaking ? '' : ' (breaks no reader)'}: ${p.detail}`);
    if (paths.length > DRIFT_PATHS_IN_EVIDENCE)
      evidence.push(`${name}: ${paths.length - DRIFT_PATHS_IN_EVIDENCE} more drifted paths`);
    const fallbacks = answers.filter((c) => c.fallback);
    if (fallbacks.length && broken.some((c) => c.fallback))
      evidence.push(
        `${name} answers as the fallback instance and breaks too: falling back to it does not help`,
      );
    if (wide && judged.length)
      evidence.push(
        `${name} run-wide (semantic-monitor): contract pass rate ${wide.contractPassRate === null ? 'n/a' : pct(wide.contractPassRate)}, fallback trigger rate ${pct(wide.fallbackTriggerRate)} over ${wide.calls} calls`,
      );
    const prefix = `tool.${tool}@${version}.`;
    figures[`${prefix}driftedPaths`] = paths.length;
    figures[`${prefix}breakingPaths`] = breaking.length;
    figures[`${prefix}judgedCalls`] = judged.length;
    figures[`${prefix}brokenCalls`] = broken.length;
    if (brokenShare !== null) figures[`${prefix}contractPassRate`] = 1 - brokenShare;
    if (answers.length)
      figures[`${prefix}fallbackTriggerRate`] =
        answers.filter((c) => c.fallbackTriggered).length / answers.length;
    since = Math.min(since, ...paths.map((p) => p.at), ...broken.map((c) => c.startedAt));
    until = Math.max(until, ...paths.map((p) => p.at), ...broken.map((c) => c.at));
  }

  // Failed response assertions on tool steps, judged against the baseline.
  const toolCalls = calls.filter((c) => c.layer.startsWith('tool:'));
  const contractBroken = toolCalls.filter((c) => c.assertionFailed);
  const baseTool = base
    ? base.digests.flatMap((d) => d.calls.filter((c) => c.layer.startsWith('tool:')))
    : [];
  const baseBroken = baseTool.filter((c) => c.assertionFailed).length / Math.max(1, baseTool.length);
  if (toolCalls.length >= 5 && contractBroken.length / toolCalls.length >= 0.2 && baseBroken < 0.05) {
    const share = contractBroken.length / toolCalls.length;
    const tools = [...new Set(contractBroken.map((c) => c.layer.slice(5)))];
    confidence = Math.max(confidence, 0.6 + 0.4 * share);
    titles.push(`${tools.join(', ')} (response assertions that passed before fail)`);
    evidence.push(
      `${contractBroken.length}/${toolCalls.length} tool calls (${pct(share)}) fail their response assertions, baseline ${pct(baseBroken)}`,
      `example: ${contractBroken[0].error ?? 'assertion failed'}`,
    );
    Object.assign(figures, {
      broken: contractBroken.length,
      calls: toolCalls.length,
      share,
      baselineShare: baseBroken,
    });
    since = Math.min(since, ...contractBroken.map((c) => c.startedAt));
    until = Math.max(until, ...contractBroken.map((c) => c.at));
  }

  if (!titles.length) return null;
  return {
    kind: 'tool-schema-drift',
    title: `tool contract drifted: ${titles.join('; ')}`,
    confidence: Math.min(1, confidence),
    since,
    until,
    evidence,
    figures,
    advice: [
      "route callers whose contract broke to the previous compatible tool version (spec: fall back to v1.9 with a timeout 200 ms above the main path's 800 ms) until the contract is fixed",
      "diff the tool's OpenAPI response schema against the last good one, pin the contract in a test and generate boundary cases for the drifted paths",
    ],
  };
}

/**
 * RAG recall avalanche (spec, anomaly class 2) from the semantic-monitor's `rag-mismatch`
 * signals: named while the latest one up to `nowMs` says most query/document pairs of the run are
 * over the KL threshold (`mismatched`). Its tally is run-wide, so the cause spans from the first
 * mismatched signal to the latest; the further the over-threshold share is past the alarm share,
 * the higher the confidence.
 */
function retrievalMismatch(timeline: RunTimeline, nowMs: number): RootCauseCause | null {
  const signals = timeline.detectors.filter(
    (s) => s.detector === Detectors.ragMismatch && s.emittedAt <= nowMs,
  );
  if (signals.length === 0) return null;
  const latest = signals.reduce((a, b) => (b.emittedAt >= a.emittedAt ? b : a));
  const f = latest.figures;
  if (f.mismatched !== 1) return null;
  const share = f.overThresholdShare ?? 0;
  const alarm = f.alarmShare ?? 0.5;
  const first = Math.min(...signals.filter((s) => s.figures.mismatched === 1).map((s) => s.emittedAt));
  const kl = (v: number | undefined) => (v === undefined ? 'n/a' : v.toExponential(2));
  return {
    kind: 'retrieval-mismatch',
    title: 'retrieved documents do not match their queries (RAG recall avalanche)',
    confidence: Math.min(1, 0.6 + (share - alarm)),
    since: first,
    until: latest.emittedAt,
    evidence: [
      `${f.overThreshold ?? 0}/${f.pairs ?? 0} query/document pairs (${pct(share)}) over KL ${kl(f.thresholdKl)} nats (softmaxed embeddings), alarm above ${pct(alarm)}`,
      `mean KL ${kl(f.meanKl)}, P95 ${kl(f.p95Kl)} nats`,
    ],
    figures: Object.fromEntries(
      ['pairs', 'overThreshold', 'overThresholdShare', 'thresholdKl', 'meanKl', 'p95Kl'].flatMap((k) =>
        f[k] === undefined ? [] : [[k, f[k]]],
      ),
    ),
    advice: [
      'check that queries and documents are embedded by the same model version (a re-embedded corpus or a new query encoder drifts them apart)',
      'rebuild or refresh the index, and test the retrieve layer alone at paragraph granularity to see where recall falls',
    ],
  };
}

function median(values: number[]): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** A cause as a report keeps it: the strongest verdict seen, and when it was first named. */
export interface TrackedCause extends RootCauseCause {
  /** Wall-clock epoch ms when the analyzer first named this cause. */
  readonly namedAt: number;
}

/**
 * Accumulates live diagnoses: each kind keeps its strongest verdict, the first time it was
 * named, and its widest time range. `observe` says whether the ranked set changed (a new kind,
 * or a new top), which is when the analyzer publishes.
 */
export class RootCauseTracker {
  private readonly causes = new Map<string, TrackedCause>();
  private top: string | null = null;

  observe(diagnosis: readonly RootCauseCause[], namedAt: number): boolean {
    let changed = false;
    for (const cause of diagnosis) {
      const seen = this.causes.get(cause.kind);
      if (!seen) {
        this.causes.set(cause.kind, { ...cause, namedAt });
        changed = true;
      } else {
        const stronger = cause.confidence > seen.confidence ? cause : seen;
        this.causes.set(cause.kind, {
          ...stronger,
          namedAt: seen.namedAt,
          since: Math.min(seen.since, cause.since),
          until: Math.max(seen.until, cause.until),
        });
      }
    }
    const top = this.ranked()[0]?.kind ?? null;
    if (top !== this.top) {
      this.top = top;
      changed = true;
    }
    return changed;
  }

  ranked(): TrackedCause[] {
    return [...this.causes.values()].sort((a, b) => b.confidence - a.confidence || a.namedAt - b.namedAt);
  }
}
