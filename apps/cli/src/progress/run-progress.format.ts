import type { RunProgress } from '@fathom/contracts';

/** As the summary prints them below 1 ms (three decimals), so the live line and the summary agree. */
const ms = (v: number | null) =>
  v === null
    ? '-'
    : v >= 1000
      ? `${(v / 1000).toFixed(2)} s`
      : `${v.toFixed(v >= 100 ? 0 : v < 1 ? 3 : 1)} ms`;

/** `m:ss` (or `h:mm:ss`) of a span in ms. */
export function clock(spanMs: number): string {
  const total = Math.floor(spanMs / 1000);
  const [h, m, s] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  const mmss = `${String(m).padStart(h ? 2 : 1, '0')}:${String(s).padStart(2, '0')}`;
  return h ? `${h}:${mmss}` : mmss;
}

const percent = (part: number, whole: number) => (whole ? ((part / whole) * 100).toFixed(2) : '0.00');

function time(p: RunProgress): string {
  const planned = p.remainingMs === null ? '' : ` / ${clock(p.elapsedMs + p.remainingMs)}`;
  const left = p.remainingMs === null ? '' : ` (${Math.ceil(p.remainingMs / 1000)} s left)`;
  return `${clock(p.elapsedMs)}${planned}${left}`;
}

function errors(p: RunProgress): string {
  const classes = Object.entries(p.errorClasses)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return `errors ${p.errors} (${percent(p.errors, p.requests)} %)${classes ? `: ${classes}` : ''}`;
}

function breakers(p: RunProgress): string {
  if (!p.openBreakers.length) return 'breakers: none open';
  return `breakers: ${p.openBreakers.map((b) => `${b.breaker} ${b.state}`).join(', ')}`;
}

function validity(p: RunProgress): string {
  const v = p.validity;
  const figures = `late ${v.late}, dropped ${v.dropped}, ${(v.behindShare * 100).toFixed(1)} % behind`;
  return `validity: ${v.valid ? 'ok' : v.reasons.join(', ')} (${figures})`;
}

/** The block a terminal shows while a run goes (redrawn in place). */
export function formatProgressBlock(p: RunProgress): string[] {
  return [
    `${p.status} ${time(p)}  ${p.requestsPerSec.toFixed(1)} req/s  requests ${p.requests}  ${errors(p)}`,
    `  e2e  P50 ${ms(p.e2e.p50Ms)}  P99 ${ms(p.e2e.p99Ms)}    TTFT  P50 ${ms(p.ttft.p50Ms)}  P99 ${ms(p.ttft.p99Ms)}`,
    `  tier ${p.tier ?? '-'}  ${breakers(p)}  ${validity(p)}`,
  ];
}

/** One line for a log (no terminal): the same figures, printed every few seconds. */
export function formatProgressLine(p: RunProgress): string {
  return (
    `progress ${time(p)} ${p.status}: ${p.requestsPerSec.toFixed(1)} req/s, requests ${p.requests}, ${errors(p)}; ` +
    `e2e P50 ${ms(p.e2e.p50Ms)} P99 ${ms(p.e2e.p99Ms)}; TTFT P50 ${ms(p.ttft.p50Ms)} P99 ${ms(p.ttft.p99Ms)}; ` +
    `tier ${p.tier ?? '-'}; ${breakers(p)}; ${validity(p)}`
  );
}
