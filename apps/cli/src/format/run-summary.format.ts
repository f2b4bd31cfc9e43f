import { SLO_BREACH_TIER, type Quantiles, type RunSummary } from '@fathom/contracts';

export interface PrintableRun {
  id: string;
  campaignId: string;
  status: string;
  reason: string | null;
  summary: RunSummary | null;
}

const ms = (v: number | null) =>
  v === null ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(1)} ms`;

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
  lines.push(
    `  throughput ${s.throughput.requestsPerSec.toFixed(1)} req/s, ${s.throughput.outputTokensPerSec.toFixed(0)} output tokens/s (${s.tokens.input} in, ${s.tokens.output} out${s.tokenizer ? `; client counts in ${s.tokenizer}` : ''})`,
  );
  lines.push(
    `  latency${' '.repeat(9)}${'P50'.padStart(10)} ${'P95'.padStart(10)} ${'P99'.padStart(10)} ${'max'.padStart(10)}`,
  );
  lines.push(row('end to end', s.latencyMs.e2e));
  lines.push(row('corrected e2e', s.latencyMs.correctedE2e));
  lines.push(row('TTFT', s.latencyMs.ttft));
  lines.push(row('inter-token', s.latencyMs.itl));
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
  lines.push(
    `  stream: ${s.semantic.responses} responses, ${s.semantic.outputTokens} tokens, mean gap ${ms(s.semantic.gapMeanMs)}, ${s.semantic.tokenCountMismatches} server/client token-count mismatches`,
  );
  const g = s.semantic.goodput;
  if (g && g.judged) {
    lines.push(
      `  goodput ${g.goodputPerSec.toFixed(1)} req/s (${g.good}/${g.judged} within SLO), semantic goodput ${g.semanticGoodputPerSec.toFixed(1)} req/s (${g.semanticallyGood}/${g.judged} also passed every semantic check)`,
    );
  }
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
  // Two verdicts that can differ: the tier (the best tier whose objectives all held: the spec's
  // SLO-0/1/2 unless the campaign sets slo.tiers) and the campaign's own pass/fail thresholds.
  const path = s.tierChanges.map((t) => t.to).join(' -> ');
  const breach = s.tier === SLO_BREACH_TIER ? ': no tier had all its objectives hold' : '';
  lines.push(`  SLO tier: ${s.tier ?? 'n/a'}${s.tierChanges.length > 1 ? ` (${path})` : ''}${breach}`);
  if (s.endReason === 'slo-failed')
    lines.push('  ended early: slo.abortOnFail (the thresholds below failed)');
  lines.push(
    s.slo.passed
      ? '  SLO: passed (the campaign thresholds)'
      : `  SLO: FAILED\n${s.slo.failures.map((f) => `    - ${f}`).join('\n')}`,
  );
  return lines.join('\n');
}
