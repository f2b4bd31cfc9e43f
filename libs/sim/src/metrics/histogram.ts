/** Cumulative Prometheus histogram (seconds or counts), rendered in exposition format. */
export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(readonly buckets: readonly number[]) {
    this.counts = buckets.map(() => 0);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]) this.counts[i]++;
  }

  render(name: string, labels: string): string {
    const sep = labels.length > 0 ? ',' : '';
    let out = '';
    for (let i = 0; i < this.buckets.length; i++)
      out += `${name}_bucket{${labels}${sep}le="${formatNumber(this.buckets[i])}"} ${this.counts[i]}.0\n`;
    out += `${name}_bucket{${labels}${sep}le="+Inf"} ${this.count}.0\n`;
    out += `${name}_count{${labels}} ${this.count}.0\n`;
    out += `${name}_sum{${labels}} ${formatNumber(this.sum)}\n`;
    return out;
  }
}

/** Python-float style numbers as prometheus_client prints them (1.0, 0.25, 1e-05 style not needed). */
export function formatNumber(value: number): string {
  if (Number.isInteger(value)) return `${value}.0`;
  return String(value);
}
