import { Counter, type Registry } from 'prom-client';

export interface ProcessFaultLog {
  error(message: string): void;
}

export type ProcessFaultKind = 'unhandled-rejection' | 'uncaught-exception';

export interface ProcessGuard {
  /** Faults counted since the guard was installed, by kind. */
  readonly counts: Readonly<Record<ProcessFaultKind, number>>;
  /** Counts into `registry` too (`fathom_process_faults_total{kind}`). */
  countInto(registry: Registry): void;
  uninstall(): void;
}

let installed: ProcessGuard | null = null;

/**
 * Keeps a service process alive through a fault no handler caught: an unhandled promise
 * rejection or an exception thrown from a timer or an event handler (what a scraped endpoint or
 * a target sent, a bug on one request's path) is logged with its stack and counted in
 * `fathom_process_faults_total{kind}`, instead of ending the process and every run it hosts.
 * One guard per process: a later call returns the first guard, counting into its registry too.
 */
export function installProcessGuard(log: ProcessFaultLog, registry?: Registry): ProcessGuard {
  if (!installed) installed = createGuard(log);
  if (registry) installed.countInto(registry);
  return installed;
}

function createGuard(log: ProcessFaultLog): ProcessGuard {
  const counts: Record<ProcessFaultKind, number> = { 'unhandled-rejection': 0, 'uncaught-exception': 0 };
  const counters = new Map<Registry, Counter<'kind'>>();
  const record = (kind: ProcessFaultKind, fault: unknown) => {
    counts[kind]++;
    for (const counter of counters.values()) counter.inc({ kind });
    const detail =
      fault instanceof Error ? (fault.stack ?? `${fault.name}: ${fault.message}`) : String(fault);
    try {
      log.error(`${kind} (process kept running): ${detail}`);
    } catch {
      // A logger that fails must not turn a survived fault into a fatal one.
    }
  };
  const onRejection = (reason: unknown) => record('unhandled-rejection', reason);
  const onException = (error: unknown) => record('uncaught-exception', error);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return {
    counts,
    countInto: (registry) => {
      if (counters.has(registry)) return;
      const existing = registry.getSingleMetric('fathom_process_faults_total') as Counter<'kind'> | undefined;
      counters.set(
        registry,
        existing ??
          new Counter({
            name: 'fathom_process_faults_total',
            help: 'Unhandled rejections and uncaught exceptions the process guard logged and survived',
            labelNames: ['kind'],
            registers: [registry],
          }),
      );
    },
    uninstall: () => {
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
      installed = null;
    },
  };
}
