import { SLO_BREACH_TIER, type Quantiles, type RunSummary } from '@fathom/contracts';
import { CLIENT_TOKENIZER } from '@fathom/load';
import { assertionCoverageText } from '@fathom/analysis';

export interface PrintableRun {
  id: string;
  campaignId: string;
  status: string;
  reason: string | null;
  summary: RunSummary | null;
}

/** Below 1 ms three decimals: a loopback or cached answer's 0.078 ms was printed as 0.1. */
const ms = (v: number | null) =>
  v === null ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 1 ? 3 : 1)} ms`;

function row(name: string, q: Quantiles): string {
  return `  ${name.padEnd(14)} ${ms(q.p50).padStart(10)} ${ms(q.p95).padStart(10)} ${ms(q.p99).padStart(10)} ${ms(q.max).padStart(10)}`;
}

/** The human-readable run summary `fathom run` and `npm start` print. */
export function formatRunSummary(run: PrintableRun, campaignName?: string): string {
  const lines: string[] = [];
  lines.push(
    `Run ${run.id}${campaignName ? ` (${campaignName})` : ''}: ${run.status}${run.reason ? ` - ${run.reason}` : ''}`,
  );
  const s = run.summary;
  if (!s) {
    lines.push('  no summary: the run ended before any telemetry was analysed');
    return lines.join('\n');
  }
  lines.push(...validityLines(s));
  const seconds = s.startedAt && s.endedAt ? ((s.endedAt - s.startedAt) / 1000).toFixed(1) : '-';
  lines.push(
    `  requests ${s.requests}  errors ${s.errors} (${(s.errorRate * 100).toFixed(2)} %)  dropped ${s.dropped}  over ${seconds} s`,
  );
  if (Object.keys(s.errorClasses).length) {
    lines.push(
      `  error classes: ${Object.entries(s.errorClasses)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
  }
  if (s.sampling) lines.push(samplingLine(s.sampling));
  if (s.validity?.generator) lines.push(generatorLine(s.validity.generator));
  lines.push(
    `  throughput ${s.throughput.requestsPerSec.toFixed(1)} req/s, ${s.throughput.outputTokensPerSec.toFixed(0)} output tokens/s (${s.tokens.input} in, ${s.tokens.output} out${outputSource(s)})`,
  );
  lines.push(
    `  latency${' '.repeat(9)}${'P50'.padStart(10)} ${'P95'.padStart(10)} ${'P99'.padStart(10)} ${'max'.padStart(10)}`,
  );
  lines.push(row('end to end', s.latencyMs.e2e));
  lines.push(row('corrected e2e', s.latencyMs.correctedE2e));
  if (s.latencyMs.ttft.count === 0 && s.requests > s.errors) {
    lines.push(
      `  TTFT${' '.repeat(11)}no first-token time (not streamed): TTFT objectives do not apply, E2E judges each response`,
    );
  } else {
    lines.push(row('TTFT', s.latencyMs.ttft));
    lines.push(row('inter-token', s.latencyMs.itl));
  }
  if (s.latencyMs.tpot) lines.push(row('TPOT', s.latencyMs.tpot));
  const extra = Object.keys(s.latencyMs.e2e.percentiles ?? {});
  if (extra.length) {
    const names = { e2e: 'end to end', ttft: 'TTFT', itl: 'inter-token', tpot: 'TPOT' } as const;
    lines.push(`  percentiles${' '.repeat(5)}${extra.map((k) => k.toUpperCase().padStart(10)).join(' ')}`);
    for (const [metric, name] of Object.entries(names)) {
      const q = s.latencyMs[metric as keyof typeof names];
      if (q?.percentiles)
        lines.push(
          `  ${name.padEnd(14)} ${extra.map((k) => ms(q.percentiles![k] ?? null).padStart(10)).join(' ')}`,
        );
    }
  }
  for (const [name, seg] of [
    ['warm-up', s.warmup],
    ['cool-down', s.cooldown],
  ] as const) {
    if (seg)
      lines.push(
        `  ${name} (not judged): ${seg.requests} requests, ${seg.errors} errors, e2e P99 ${ms(seg.latencyMs.e2e.p99)}, TTFT P99 ${ms(seg.latencyMs.ttft.p99)}`,
      );
  }
  if (s.sweep) {
    lines.push(
      `  sweep${' '.repeat(11)}${['load', 'req/s', 'e2e P99', 'TTFT P99', 'ITL P99', 'TPOT P99', 'goodput/s', 'SLO'].map((h) => h.padStart(10)).join(' ')}`,
    );
    for (const step of s.sweep.steps) {
      const load =
        step.kind === 'rate'
          ? `${(step.targetRatePerSec ?? 0).toFixed(1)}/s`
          : `${step.concurrency ?? '-'} users`;
      lines.push(
        `  ${`${step.index} ${step.kind}`.padEnd(14)} ${[
          load,
          step.throughput.requestsPerSec.toFixed(1),
          ms(step.latencyMs.e2e.p99),
          ms(step.latencyMs.ttft.p99),
          ms(step.latencyMs.itl.p99),
          ms(step.latencyMs.tpot.p99),
          step.goodput ? step.goodput.goodputPerSec.toFixed(1) : '-',
          step.slo.passed ? 'pass' : 'FAIL',
        ]
          .map((c) => c.padStart(10))
          .join(' ')}`,
      );
    }
    lines.push(`  knee: ${s.sweep.knee.text}`);
  }
  lines.push(streamLine(s));
  const g = s.semantic.goodput;
  if (g && g.judged) {
    // Judged on the sampled records: the rates scale their shares to every request, and say so.
    const of = g.judged < s.requests ? ` sampled responses` : '';
    const scaled = of ? `; both rates scale these shares to all ${s.requests} requests` : '';
    lines.push(
      `  goodput ${g.goodputPerSec.toFixed(1)} req/s (${g.good}/${g.judged}${of} within SLO), semantic goodput ${g.semanticGoodputPerSec.toFixed(1)} req/s (${g.semanticallyGood}/${g.judged} also passed every semantic check${scaled})`,
    );
  }
  if (s.assertions) lines.push(`  assertions: ${assertionCoverageLine(s.assertions)}`);
  const missed = (s.steps ?? []).filter((st) => st.slaMisses > 0);
  if (missed.length)
    lines.push(
      `  steps over their budget: ${missed.map((st) => `${st.name} ${st.slaMisses}/${st.runs} > ${st.budgetMs} ms`).join(', ')}`,
    );
  if (s.gpu.scrapes) {
    const shown = [
      'kv_cache_usage_ratio',
      'prefix_cache_hit_ratio',
      'requests_running',
      'requests_waiting',
      'dram_active_ratio',
      'gpu_util_pct',
    ]
      .filter((m) => s.gpu.last[m] !== undefined)
      .map((m) => `${m} ${Number(s.gpu.last[m].toFixed(3))}`);
    lines.push(
      `  gpu/server: ${s.gpu.scrapes} scrapes (${s.gpu.gaps} gaps)${shown.length ? `; last ${shown.join(', ')}` : ''}`,
    );
  }
  if (s.adversarial?.length) lines.push(...adversarialLines(s.adversarial));
  if (s.endReason === 'slo-failed')
    lines.push('  ended early: slo.abortOnFail (the thresholds below failed)');
  lines.push(...verdictLines(s));
  return lines.join('\n');
}

const bits = (v: number | null | undefined) =>
  v === null || v === undefined ? 'n/a' : `${v.toFixed(2)} bits`;

/** adversarial-entropy: per probed prompt, the risk before and each variant's KL and risk after. */
export function adversarialLines(probes: NonNullable<RunSummary['adversarial']>): string[] {
  const variants = probes.flatMap((p) => p.variants);
  const kept = variants.filter((v) => v.kept);
  const moved = kept.filter((v) => v.riskMoved === true).length;
  const lines = [
    `  adversarial-entropy: ${probes.length} prompts probed, ${variants.length} variants, ${kept.length} within the KL bound and sent, hallucination risk moved on ${moved}`,
  ];
  for (const p of probes) {
    const head = `    shard ${p.shard} prompt #${p.promptIndex}`;
    if (p.status === 'skipped') {
      lines.push(`${head}: skipped (${p.reason ?? 'no reason'})`);
      continue;
    }
    lines.push(
      `${head}: peak at token ${p.peak?.position} (${bits(p.peak?.windowMeanBits)}), before: max window ${bits(p.before?.maxWindowMeanBits)}, ${p.before?.segments ?? 0} risk segments`,
    );
    for (const v of p.variants) {
      const outcome = !v.kept
        ? 'dropped (not sent)'
        : v.after
          ? `after: max window ${bits(v.after.maxWindowMeanBits)} (${v.deltaBits !== null && v.deltaBits >= 0 ? '+' : ''}${v.deltaBits?.toFixed(2) ?? 'n/a'}), ${v.after.segments} risk segments, risk ${v.riskMoved ? 'MOVED' : 'unchanged'}`
          : `sent; ${v.error ?? 'no probe answer'}`;
      lines.push(`      KL ${v.kl.toFixed(3)}, ${v.substitutions.length} words: ${outcome}`);
    }
  }
  return lines;
}

/** The measurement verdict first: a client-bound run's figures describe the client, not the target. */
function validityLines(s: RunSummary): string[] {
  if (!s.validity || s.validity.valid) return [];
  const ordered = [...s.validity.reasons].sort(
    (a, b) => Number(b.kind === 'client-bound') - Number(a.kind === 'client-bound'),
  );
  return ordered.map((r) =>
    r.kind === 'client-bound'
      ? `  CLIENT-BOUND: ${r.detail}`
      : `  measurement invalid (${r.kind}): ${r.detail}`,
  );
}

/** What the load generator cost itself, client-bound or not (the figures the verdict weighs). */
function generatorLine(g: NonNullable<NonNullable<RunSummary['validity']>['generator']>): string {
  const onCore =
    g.coreRunShareMedian === undefined ? '' : ` (on its core ${(g.coreRunShareMedian * 100).toFixed(0)} %)`;
  const wait =
    g.coreWaitShareMedian === undefined
      ? ''
      : `, waited for its core ${(g.coreWaitShareMedian * 100).toFixed(0)} % of the time`;
  return `  generator (median of ${g.windows} windows): engine thread busy ${(g.loopUtilizationMedian * 100).toFixed(0)} %${onCore}${wait}; event-loop delay P99 up to ${ms(g.loopDelayP99MaxMs)}`;
}

function samplingLine(sampling: NonNullable<RunSummary['sampling']>): string {
  const share = sampling.requests ? ` (${((100 * sampling.records) / sampling.requests).toFixed(1)} %)` : '';
  const embedded = sampling.embedded === null ? '' : `, ${sampling.embedded} embedded`;
  return `  sampled: latency figures cover all ${sampling.requests} requests; ${sampling.records} per-request records${share}, ${sampling.semanticChecked} semantically checked${embedded}`;
}

/** Where the output token count comes from: the server's usage, or the client's own estimate. */
function outputSource(s: RunSummary): string {
  const counted = s.semantic.serverCounted;
  const judged = s.semantic.responses;
  if (counted === undefined || judged === 0 || s.tokens.output === 0)
    return s.tokenizer ? `; client counts in ${s.tokenizer}` : '';
  if (counted === judged) return ', output as the server counted it';
  if (counted === 0)
    return `, output tokens are client-side estimates (${s.tokenizer ?? CLIENT_TOKENIZER}): the server sent no usage`;
  return `, output as the server counted it on ${counted} of ${judged} checked responses, else client-side estimates (${s.tokenizer ?? CLIENT_TOKENIZER})`;
}

/** What the stream carried: chunks are counted as chunks, never as tokens. */
function streamLine(s: RunSummary): string {
  const m = s.semantic;
  if (m.responses === 0) return '  stream: no response checked';
  const counts =
    m.serverCounted === undefined
      ? `${m.tokenCountMismatches} server/client token-count mismatches`
      : m.serverCounted === 0
        ? 'token counts: no server count (the server sent no usage)'
        : `token counts: ${m.tokenCountMismatches} server/client mismatches in ${m.serverCounted} server-counted responses`;
  if (m.chunks === undefined) {
    return `  stream: ${m.responses} responses, ${m.outputTokens} tokens, mean gap ${ms(m.gapMeanMs)}, ${counts}`;
  }
  if (m.chunks === 0) return `  responses: ${m.responses} checked, not streamed (no chunks); ${counts}`;
  const logprobTokens = m.outputTokens !== m.chunks ? ` (${m.outputTokens} tokens by their logprobs)` : '';
  return `  stream: ${m.responses} responses, ${m.chunks} content chunks${logprobTokens}, mean gap ${ms(m.gapMeanMs)} between chunks; ${counts}`;
}

/**
 * One verdict block: the tier (the tier objectives judged over the whole run: the spec's SLO-0/1
 * unless the campaign sets slo.tiers) and the campaign SLO (its own thresholds, which decide the
 * exit code). When one holds and the other does not, the block says why both are true.
 */
function verdictLines(s: RunSummary): string[] {
  const lines = ['  verdict:'];
  const during = s.tierChanges.map((t) => t.to);
  const course =
    during.length > 1 || (during.length === 1 && during[0] !== s.tier)
      ? `; during the run ${during.join(' -> ')}`
      : '';
  const why = s.tierReason
    ? ` (${s.tierReason})`
    : s.tier === SLO_BREACH_TIER
      ? ': no tier had all its objectives hold'
      : '';
  lines.push(`    SLO tier: ${s.tier ?? 'n/a'}${s.tierReason ? ' over the whole run' : ''}${why}${course}`);
  lines.push(
    s.slo.passed
      ? "    SLO: passed (the campaign's thresholds, which decide the exit code)"
      : `    SLO: FAILED\n${s.slo.failures.map((f) => `      - ${f}`).join('\n')}`,
  );
  const tierHeld = s.tier !== null && s.tier !== SLO_BREACH_TIER;
  if (s.tier !== null && tierHeld !== s.slo.passed) {
    lines.push(
      s.slo.passed
        ? "    why both: the tiers hold the run to the tier objectives (the spec's SLO-0/SLO-1 unless slo.tiers is set), stricter than this campaign's slo thresholds"
        : "    why both: this campaign's slo thresholds are stricter than the tier objectives the run met",
    );
  }
  return lines;
}

/** One line of assertion coverage, naming the failing and never-run ones (the first three of each). */
export function assertionCoverageLine(c: NonNullable<RunSummary['assertions']>): string {
  const named = (label: string, state: string, figure: (a: (typeof c.byName)[number]) => string) => {
    const list = c.byName.filter((a) => a.state === state);
    if (!list.length) return '';
    const shown = list.slice(0, 3).map((a) => `${a.name}${figure(a)}`);
    return `; ${label}: ${shown.join(', ')}${list.length > 3 ? `, +${list.length - 3}` : ''}`;
  };
  return `${assertionCoverageText(c)}${named('failing', 'failed', (a) => ` ${a.failures}/${a.passes + a.failures}`)}${named('never ran', 'never-ran', () => '')}`;
}
