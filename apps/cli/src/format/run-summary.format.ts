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
    `  throughput ${s.throughput.requestsPerSec.toFixed(1)} req/s, ${s.throughput.outputTokensPerSec.toFixed(0)} output tokens/s (${s.tokens.input} in, ${s.tokens.output} out)`,
  );
  lines.push(
    `  latency${' '.repeat(9)}${'P50'.padStart(10)} ${'P95'.padStart(10)} ${'P99'.padStart(10)} ${'max'.padStart(10)}`,
  );
  lines.push(row('end to end', s.latencyMs.e2e));
  lines.push(row('corrected e2e', s.latencyMs.correctedE2e));
  lines.push(row('TTFT', s.latencyMs.ttft));
  lines.push(row('inter-token', s.latencyMs.itl));
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
  lines.push(
    s.slo.passed
      ? '  SLO: passed (the campaign thresholds)'
      : `  SLO: FAILED\n${s.slo.failures.map((f) => `    - ${f}`).join('\n')}`,
  );
  return lines.join('\n');
}
