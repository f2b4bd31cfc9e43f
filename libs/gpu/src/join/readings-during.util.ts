import type { GpuSample, GpuTelemetry } from '@fathom/contracts';

export interface ReadingsDuringOptions {
  /**
   * Also take the last scrape before `startMs` of each source (a gauge read just before the
   * request started still describes its first moments). Default true.
   */
  readonly includePrevious?: boolean;
}

export interface ReadingsDuring {
  /** ok scrapes inside the window (plus the one before it per source), oldest first. */
  readonly readings: {
    readonly source: string;
    readonly url: string;
    readonly scrapedAt: number;
    readonly samples: readonly GpuSample[];
  }[];
  /** Failed scrapes inside the window: the request ran while the source was not visible. */
  readonly gaps: {
    readonly url: string;
    readonly scrapedAt: number;
    readonly health: GpuTelemetry['health'];
    readonly error?: string;
  }[];
}

/**
 * The GPU and inference-server readings during one request's lifetime [startMs, endMs] (epoch
 * ms, e.g. a request record's `startedAt` and `startedAt + e2eMs`), from stored gpu telemetry
 * of its run. Pure; input need not be sorted.
 */
export function readingsDuring(
  telemetry: readonly GpuTelemetry[],
  startMs: number,
  endMs: number,
  options: ReadingsDuringOptions = {},
): ReadingsDuring {
  const sorted = [...telemetry].sort((a, b) => a.scrapedAt - b.scrapedAt);
  const readings: ReadingsDuring['readings'] = [];
  const gaps: ReadingsDuring['gaps'] = [];
  const previous = new Map<string, GpuTelemetry>();
  for (const t of sorted) {
    if (t.scrapedAt < startMs) {
      if (t.health === 'ok') previous.set(t.url, t);
      continue;
    }
    if (t.scrapedAt > endMs) break;
    if (t.health === 'ok')
      readings.push({ source: t.source, url: t.url, scrapedAt: t.scrapedAt, samples: t.samples });
    else
      gaps.push({
        url: t.url,
        scrapedAt: t.scrapedAt,
        health: t.health,
        ...(t.error === undefined ? {} : { error: t.error }),
      });
  }
  if (options.includePrevious ?? true) {
    const before = [...previous.values()].map((t) => ({
      source: t.source,
      url: t.url,
      scrapedAt: t.scrapedAt,
      samples: t.samples,
    }));
    readings.unshift(...before.sort((a, b) => a.scrapedAt - b.scrapedAt));
  }
  return { readings, gaps };
}
