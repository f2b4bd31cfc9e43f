import { Counter, Gauge, type Registry } from 'prom-client';
import type { WindowSnapshot } from '@fathom/load';

/**
 * Prometheus view of this load-generator, fed from the histogram windows (never from the
 * per-request hot path): what Prometheus rules and Grafana read beside the run reports.
 */
export class LoadMetrics {
  private readonly requests: Counter<'outcome'>;
  private readonly dropped: Counter;
  private readonly late: Counter;
  private readonly outputTokens: Counter;
  readonly activeShards: Gauge;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'fathom_load_requests_total',
      help: 'Requests finished by this load-generator, by outcome (ok or the error class)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.dropped = new Counter({
      name: 'fathom_load_dropped_iterations_total',
      help: 'Iterations an open-model profile could not start in time',
      registers: [registry],
    });
    this.late = new Counter({
      name: 'fathom_load_late_iterations_total',
      help: 'Iterations started later than scheduled',
      registers: [registry],
    });
    this.outputTokens = new Counter({
      name: 'fathom_load_output_tokens_total',
      help: 'Output tokens received',
      registers: [registry],
    });
    this.activeShards = new Gauge({
      name: 'fathom_load_active_shards',
      help: 'Shards running in this process',
      registers: [registry],
    });
  }

  observe(window: WindowSnapshot): void {
    this.requests.inc({ outcome: 'ok' }, window.requests - window.errors);
    for (const [errorClass, n] of Object.entries(window.errorClasses))
      this.requests.inc({ outcome: errorClass }, n);
    this.dropped.inc(window.dropped);
    this.late.inc(window.late);
    this.outputTokens.inc(window.outputTokens);
  }
}
