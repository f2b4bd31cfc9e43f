import { encodeHistogram } from './latency-histogram.util';
import type { RetiredWindow, WindowHistograms } from './window.recorder';
import type { WindowSnapshot } from './window.snapshot';

/** Runs `task` in a later macrotask; returns a cancel function. */
export type Scheduler = (task: () => void) => () => void;

const immediate: Scheduler = (task) => {
  const handle = setImmediate(task);
  return () => clearImmediate(handle);
};

export interface WindowEncoderOptions {
  /** Receives every window, fully encoded, in `push` order. Must not throw. */
  deliver: (window: WindowSnapshot) => void;
  /** Gets each window's histograms back once they are encoded (e.g. `WindowRecorder.recycle`). */
  recycle?: (histograms: WindowHistograms) => void;
  /**
   * Most retired windows held unencoded. A `push` beyond it first encodes the oldest at once
   * (blocking, as an inline flush would), so memory stays bounded and no window is lost when the
   * encoding falls behind.
   */
  maxPending?: number;
  schedule?: Scheduler;
}

interface Pending {
  retired: RetiredWindow;
  encoded: string[];
}

/**
 * Encodes retired windows off the window boundary: one histogram per macrotask (`setImmediate`),
 * so the event loop is blocked for one histogram's encoding at a time rather than four, and
 * requests' I/O callbacks run between them. Windows are delivered whole and in order.
 */
export class WindowEncoder {
  private readonly queue: Pending[] = [];
  private cancel: (() => void) | null = null;
  private readonly deliver: WindowEncoderOptions['deliver'];
  private readonly recycle: NonNullable<WindowEncoderOptions['recycle']>;
  private readonly maxPending: number;
  private readonly schedule: Scheduler;

  constructor(options: WindowEncoderOptions) {
    this.deliver = options.deliver;
    this.recycle = options.recycle ?? (() => undefined);
    this.maxPending = Math.max(1, options.maxPending ?? 2);
    this.schedule = options.schedule ?? immediate;
  }

  /** Windows retired but not yet delivered. */
  get pending(): number {
    return this.queue.length;
  }

  push(retired: RetiredWindow): void {
    while (this.queue.length >= this.maxPending) this.finishOldest();
    this.queue.push({ retired, encoded: [] });
    this.arm();
  }

  /** Encodes and delivers everything pending now (end of run), in order. */
  drain(): void {
    this.cancel?.();
    this.cancel = null;
    while (this.queue.length > 0) this.finishOldest();
  }

  private arm(): void {
    if (this.cancel === null && this.queue.length > 0) this.cancel = this.schedule(this.tick);
  }

  private readonly tick = (): void => {
    this.cancel = null;
    const head = this.queue[0];
    if (head === undefined) return;
    try {
      head.encoded.push(encodeHistogram(head.retired.histograms[head.encoded.length]));
      if (head.encoded.length === head.retired.histograms.length) this.complete();
    } finally {
      this.arm();
    }
  };

  private finishOldest(): void {
    const head = this.queue[0];
    while (head.encoded.length < head.retired.histograms.length)
      head.encoded.push(encodeHistogram(head.retired.histograms[head.encoded.length]));
    this.complete();
  }

  private complete(): void {
    const { retired, encoded } = this.queue.shift() as Pending;
    const [e2e, correctedE2e, ttft, itl, tpot] = encoded;
    this.recycle(retired.histograms);
    this.deliver({ ...retired.counts, histogramsUs: { e2e, correctedE2e, ttft, itl, tpot } });
  }
}
