import { cpus, freemem, loadavg } from 'node:os';
import { SpanKind, SpanStatusCode, type Context } from '@opentelemetry/api';
import type { tracing } from '@opentelemetry/sdk-node';
import { Counter, type Registry } from 'prom-client';
import { z } from 'zod';

/** One reading of the host: CPU busy share (0..1, all cores) and free memory. */
export interface HostReadings {
  cpuBusy: number;
  freeMemoryBytes: number;
}

export interface EdgeSamplingOptions {
  /** The host is short when its CPU busy share is above this (spec: CPU > 75 %)... */
  cpuBusyAbove: number;
  /** ...and its free memory below this (spec: free memory < 128 MB; read here as MiB). */
  freeMemoryBelowBytes: number;
  /** Readings are taken at most this often; spans in between reuse the last verdict. */
  refreshMs: number;
}

export const EDGE_SAMPLING_DEFAULTS: EdgeSamplingOptions = {
  cpuBusyAbove: 0.75,
  freeMemoryBelowBytes: 128 * 1024 * 1024,
  refreshMs: 1000,
};

/** Marks a span reduced by edge sampling (its only attribute then). */
export const EDGE_REDUCED_ATTRIBUTE = 'fathom.edge_sampling.reduced';

/**
 * Host readings from `os`: CPU busy share over the interval since the previous call (all cores'
 * times), the 1-minute load average per core on the first call (no interval yet), and
 * `os.freemem()` (libuv: MemAvailable on Linux).
 */
export function osHostReadings(): () => HostReadings {
  let last: { idle: number; total: number } | null = null;
  return () => {
    let idle = 0;
    let total = 0;
    const all = cpus();
    for (const { times } of all) {
      idle += times.idle;
      total += times.user + times.nice + times.sys + times.irq + times.idle;
    }
    const busy =
      last !== null && total > last.total
        ? 1 - (idle - last.idle) / (total - last.total)
        : Math.min(1, loadavg()[0] / Math.max(1, all.length));
    last = { idle, total };
    return { cpuBusy: Math.max(0, Math.min(1, busy)), freeMemoryBytes: freemem() };
  };
}

/**
 * Whether the host is short now (spec, edge sampling: CPU above and free memory below their
 * thresholds, both). Reads the host at most once per `refreshMs`; cheap enough per span.
 */
export class HostPressure {
  private checkedAt = -Infinity;
  private short = false;
  last: HostReadings | null = null;

  constructor(
    private readonly read: () => HostReadings = osHostReadings(),
    private readonly options: EdgeSamplingOptions = EDGE_SAMPLING_DEFAULTS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  isShort(): boolean {
    const now = this.now();
    if (now - this.checkedAt < this.options.refreshMs) return this.short;
    this.checkedAt = now;
    try {
      this.last = this.read();
    } catch {
      return this.short; // a failed reading keeps the last verdict
    }
    this.short =
      this.last.cpuBusy > this.options.cpuBusyAbove &&
      this.last.freeMemoryBytes < this.options.freeMemoryBelowBytes;
    return this.short;
  }
}

/**
 * Edge sampling as a span processor in front of the exporting one (spec: "when CPU > 75 % and
 * free memory < 128 MB, switch to head sampling that keeps only trace id and the error flag").
 * Invariants:
 * - The decision is made when a span starts (head), from `HostPressure`; the span itself is
 *   recorded as usual (the application sees no difference).
 * - A span started under pressure reaches the exporter reduced: its trace and span ids, its
 *   status code (the error flag: ERROR or UNSET, no message), its end time as both start and end,
 *   `EDGE_REDUCED_ATTRIBUTE` as its only attribute, no parent, events or links, name `reduced`.
 * - `counts` says how many spans went out whole and reduced (`fathom_trace_spans_total{sampling}`
 *   too, once `countInto` a registry).
 */
export class EdgeSamplingSpanProcessor implements tracing.SpanProcessor {
  private readonly reducedSpans = new WeakSet<object>();
  readonly counts = { full: 0, reduced: 0 };
  private readonly counters: Counter<'sampling'>[] = [];

  constructor(
    private readonly inner: tracing.SpanProcessor,
    readonly pressure: HostPressure = new HostPressure(),
  ) {}

  countInto(registry: Registry): void {
    const existing = registry.getSingleMetric('fathom_trace_spans_total') as Counter<'sampling'> | undefined;
    if (existing && this.counters.includes(existing)) return; // counted there already
    this.counters.push(
      existing ??
        new Counter({
          name: 'fathom_trace_spans_total',
          help: "Fathom's own spans exported, whole (full) or reduced by edge sampling (host short)",
          labelNames: ['sampling'],
          registers: [registry],
        }),
    );
  }

  onStart(span: tracing.Span, parentContext: Context): void {
    if (this.pressure.isShort()) this.reducedSpans.add(span);
    this.inner.onStart(span, parentContext);
  }

  onEnd(span: tracing.ReadableSpan): void {
    const reduced = this.reducedSpans.has(span);
    const kind = reduced ? 'reduced' : 'full';
    this.counts[kind]++;
    for (const counter of this.counters) counter.inc({ sampling: kind });
    this.inner.onEnd(reduced ? reducedSpan(span) : span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

function reducedSpan(span: tracing.ReadableSpan): tracing.ReadableSpan {
  const context = span.spanContext();
  return {
    name: 'reduced',
    kind: SpanKind.INTERNAL,
    spanContext: () => context,
    startTime: span.endTime,
    endTime: span.endTime,
    status: { code: span.status.code === SpanStatusCode.ERROR ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
    attributes: { [EDGE_REDUCED_ATTRIBUTE]: true },
    links: [],
    events: [],
    duration: [0, 0],
    ended: true,
    resource: span.resource,
    instrumentationScope: span.instrumentationScope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

const blankIsUnset = (v: unknown) => (v === '' ? undefined : v);

/**
 * The edge-sampling thresholds as environment settings (validated with the service's others):
 * FATHOM_EDGE_CPU_BUSY_ABOVE (0..1, default 0.75) and FATHOM_EDGE_FREE_MEMORY_BELOW_MB (MiB,
 * default 128); FATHOM_EDGE_SAMPLING=off exports every span whole.
 */
export const EdgeSamplingSettingsShape = {
  FATHOM_EDGE_SAMPLING: z.preprocess(blankIsUnset, z.enum(['on', 'off']).default('on')),
  FATHOM_EDGE_CPU_BUSY_ABOVE: z.preprocess(
    blankIsUnset,
    z.coerce.number().min(0).max(1).default(EDGE_SAMPLING_DEFAULTS.cpuBusyAbove),
  ),
  FATHOM_EDGE_FREE_MEMORY_BELOW_MB: z.preprocess(
    blankIsUnset,
    z.coerce
      .number()
      .nonnegative()
      .max(1024 * 1024)
      .default(EDGE_SAMPLING_DEFAULTS.freeMemoryBelowBytes / (1024 * 1024)),
  ),
};
export type EdgeSamplingSettings = z.infer<z.ZodObject<typeof EdgeSamplingSettingsShape>>;

/** The thresholds of validated settings; null when edge sampling is off. */
export function edgeSamplingOptions(settings: Partial<EdgeSamplingSettings>): EdgeSamplingOptions | null {
  if (settings.FATHOM_EDGE_SAMPLING === 'off') return null;
  return {
    ...EDGE_SAMPLING_DEFAULTS,
    cpuBusyAbove: settings.FATHOM_EDGE_CPU_BUSY_ABOVE ?? EDGE_SAMPLING_DEFAULTS.cpuBusyAbove,
    freeMemoryBelowBytes:
      (settings.FATHOM_EDGE_FREE_MEMORY_BELOW_MB ?? EDGE_SAMPLING_DEFAULTS.freeMemoryBelowBytes / 1048576) *
      1048576,
  };
}
