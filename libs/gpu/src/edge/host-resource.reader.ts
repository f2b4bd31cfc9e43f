import * as os from 'node:os';

export interface HostReading {
  /** Busy CPU over all cores since the previous reading, 0..100. */
  readonly cpuPct: number;
  readonly freeMemBytes: number;
  readonly atMs: number;
}

/** The parts of `node:os` the reader uses; injected so tests drive it. */
export interface HostOs {
  cpus(): Pick<os.CpuInfo, 'times'>[];
  freemem(): number;
  loadavg(): number[];
}

/**
 * Reads the collector's own host. CPU is the busy share of all cores' time between two reads
 * (from `os.cpus()` tick deltas); on the first read, with no previous ticks, the 1-minute load
 * average over the core count stands in (capped at 100).
 */
export class HostResourceReader {
  private previous?: { busy: number; total: number };

  constructor(
    private readonly hostOs: HostOs = os,
    private readonly now: () => number = Date.now,
  ) {}

  read(): HostReading {
    const cpus = this.hostOs.cpus();
    let busy = 0;
    let total = 0;
    for (const { times } of cpus) {
      const all = times.user + times.nice + times.sys + times.idle + times.irq;
      total += all;
      busy += all - times.idle;
    }
    let cpuPct: number;
    if (this.previous && total > this.previous.total) {
      cpuPct = (100 * (busy - this.previous.busy)) / (total - this.previous.total);
    } else {
      cpuPct = Math.min(100, (100 * (this.hostOs.loadavg()[0] ?? 0)) / Math.max(1, cpus.length));
    }
    this.previous = { busy, total };
    return {
      cpuPct: Math.max(0, Math.min(100, cpuPct)),
      freeMemBytes: this.hostOs.freemem(),
      atMs: this.now(),
    };
  }
}
