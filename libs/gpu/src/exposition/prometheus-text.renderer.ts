import type { PromFamily } from './prometheus-text.parser';

/** Renders families as Prometheus text format 0.0.4 (the inverse of `parsePrometheusText`). */
export function renderPrometheusText(families: readonly PromFamily[]): string {
  const out: string[] = [];
  for (const family of families) {
    if (family.help !== undefined) out.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
    out.push(`# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels)
        .map(([name, value]) => `${name}="${escapeLabelValue(value)}"`)
        .join(',');
      const ts = sample.timestampMs === undefined ? '' : ` ${sample.timestampMs}`;
      out.push(`${sample.name}${labels ? `{${labels}}` : ''} ${formatPromFloat(sample.value)}${ts}`);
    }
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

export function formatPromFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
