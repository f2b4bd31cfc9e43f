import type { RunProgress } from '@fathom/contracts';
import { formatProgressBlock, formatProgressLine } from './run-progress.format';

/** Where progress goes: process.stderr, or a test's stand-in. */
export interface ProgressOutput {
  isTTY?: boolean;
  columns?: number;
  write(chunk: string): unknown;
}

export interface ProgressReporterOptions {
  output: ProgressOutput;
  /** The run's progress now; null while it is unknown (e.g. not stored yet). */
  fetch: () => Promise<RunProgress | null>;
  /** Redraw period on a terminal. */
  ttyIntervalMs?: number;
  /** Period of the plain lines written elsewhere (a pipe, a CI log). */
  lineIntervalMs?: number;
}

const ESC = '\x1b[';

/**
 * Live progress of one run. On a terminal: one block redrawn in place with ANSI (cursor up
 * `n` lines, clear to the end of the screen), each line cut to the terminal's width so a wrap
 * cannot throw the count off; erased by `stop()`, so the summary that follows stands alone.
 * Elsewhere: one plain line per period, nothing erased. Polls never overlap; a failed poll
 * shows why, once, and the next poll tries again.
 */
export class ProgressReporter {
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private drawnLines = 0;
  private lastProblem: string | null = null;
  private stopped = false;

  constructor(private readonly options: ProgressReporterOptions) {}

  private get tty(): boolean {
    return this.options.output.isTTY === true;
  }

  private get intervalMs(): number {
    return this.tty ? (this.options.ttyIntervalMs ?? 1000) : (this.options.lineIntervalMs ?? 5000);
  }

  start(): this {
    this.schedule();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.inFlight;
    if (this.tty && this.drawnLines) this.options.output.write(`${ESC}${this.drawnLines}F${ESC}J`);
    this.drawnLines = 0;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.inFlight = this.tick().finally(() => {
        this.inFlight = null;
        this.schedule();
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    let progress: RunProgress | null;
    try {
      progress = await this.options.fetch();
    } catch (error) {
      const problem = `progress unavailable: ${error instanceof Error ? error.message : String(error)}`;
      if (problem !== this.lastProblem) this.draw([problem]);
      this.lastProblem = problem;
      return;
    }
    this.lastProblem = null;
    if (!progress || this.stopped) return;
    this.draw(this.tty ? formatProgressBlock(progress) : [formatProgressLine(progress)]);
  }

  private draw(lines: string[]): void {
    const { output } = this.options;
    if (!this.tty) {
      output.write(lines.map((l) => `${l}\n`).join(''));
      return;
    }
    const width = output.columns && output.columns > 1 ? output.columns - 1 : Infinity;
    const clipped = lines.map((l) => (l.length > width ? `${l.slice(0, width - 1)}…` : l));
    const erase = this.drawnLines ? `${ESC}${this.drawnLines}F${ESC}J` : '';
    output.write(`${erase}${clipped.join('\n')}\n`);
    this.drawnLines = clipped.length;
  }
}
