import type { Worker } from 'node:worker_threads';
import { defaultRestartBackoffMs, startWorkerThread } from '@fathom/semantic';
import type {
  MirrorCopiesCommand,
  MirrorReport,
  MirrorReportCommand,
  MirrorWorkerData,
} from './mirror-worker.protocol';

export interface MirrorThreadOptions extends MirrorWorkerData {
  /** Share of offered bodies copied, 0..1. */
  readonly sampleRate: number;
  /** Copies handed to the thread and not yet settled, at most; beyond it an offer is dropped (counted). */
  readonly maxPending: number;
  /** Delay before restart n (1-based) after the thread died; default 1 s doubling, at most 30 s. */
  readonly restartBackoffMs?: (consecutiveDeaths: number) => number;
}

/** What became of the copies so far (as of the thread's last report: it may lag by up to 50 ms). */
export interface MirrorCounts {
  /** Copies accepted by the receiver, dropped at the cap, failed (receiver down, refused, timed out). */
  copied: number;
  copiesDropped: number;
  copiesFailed: number;
  /** Sampled requests not copied because their body was over the gateway's buffered-body cap. */
  copiesTooLarge: number;
  /** Copying paused because the receiver said the campaign is not running (404): until then, ms. */
  pausedUntil: number;
  /** Times the copy thread died and was restarted (its pending copies are in `copiesFailed`). */
  copyWorkerDeaths: number;
  /** False with no mirror, or while the kill switch is off. */
  mirroring: boolean;
  /** A copy thread is started and ready to take copies (false while it starts or restarts). */
  copyThreadUp: boolean;
}

/** A thread that stayed up this long before dying starts the restart backoff again from 1 s. */
const STABLE_AFTER_MS = 60_000;

/**
 * Copies are handed to the thread when this many wait (at the end of the forwarding loop's
 * turn), else at most `FLUSH_AFTER_MS` after the first: at a production rate each request came
 * alone, and a message per request woke the copy thread per request on the gateway's core.
 */
const FLUSH_AT_COPIES = 8;
const FLUSH_AFTER_MS = 5;
/**
 * How long ending the thread on purpose waits for its last report. 100 ms was too short on a
 * loaded host (CI, 2 cores, tests in parallel): a copy the receiver had accepted was counted
 * dropped. The kill switch still acts within a second.
 */
const END_REPORT_MS = 500;

/**
 * The shadow gateway's copy thread (`mirror.worker`), seen from the forwarding loop. `offer` is
 * the only call on that loop's path: the pause and sampling decision, the pending cap, one copy
 * of the body into a buffer; the buffers offered in one turn of that loop go over in one message
 * (transferred) at its end. Invariants:
 * - `pending` = copies offered (batched or handed over) and not reported settled; never above
 *   `maxPending`;
 * - an offer while no thread is ready (starting, restarting) is dropped and counted;
 * - the thread dies (crash, `terminate`): its pending copies count as failed, it is restarted
 *   after a backoff; a thread that is alive but stuck keeps its copies until the cap, and later
 *   offers are dropped (counted), so the forwarding loop never waits for it;
 * - `setMirroring(false)` (the kill switch) ends the thread at once: its pending copies count as
 *   dropped, nothing is copied until `setMirroring(true)` started a new one;
 * - counts come from the thread's reports, so they may lag by up to 50 ms (REPORT_AFTER_MS).
 */
export class MirrorThread {
  private worker: Worker | null = null;
  private readyNow = false;
  private enabled = true;
  private closed = false;
  private pending = 0;
  private consecutiveDeaths = 0;
  private readySince = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private whenReady: { resolve: () => void; reject: (error: Error) => void } | null = null;
  /** Offered and not yet handed over, posted together by `flush` (see FLUSH_AT_COPIES). */
  private batch: MirrorCopiesCommand = { type: 'copies', bodies: [], intents: [] };
  private flushTimer: NodeJS.Timeout | null = null;
  private flushSoon = false;
  private readonly counts = {
    copied: 0,
    copiesDropped: 0,
    copiesTooLarge: 0,
    copiesFailed: 0,
    pausedUntil: 0,
    copyWorkerDeaths: 0,
  };

  private constructor(private readonly options: MirrorThreadOptions) {}

  /** Starts the thread; resolves once it is ready, rejects when it dies before. */
  static async start(options: MirrorThreadOptions): Promise<MirrorThread> {
    const thread = new MirrorThread(options);
    try {
      await thread.spawn();
    } catch (error) {
      await thread.close(); // no restart of a thread that never started: the caller hears why
      throw error;
    }
    return thread;
  }

  /** On the forwarding loop: copies `body` to the receiver, or decides not to. Never throws, never waits. */
  offer(body: Buffer, intent: string | null): void {
    if (!this.samples()) return;
    const worker = this.worker;
    if (!this.readyNow || worker === null || this.pending >= this.options.maxPending) {
      this.counts.copiesDropped++;
      return;
    }
    // A buffer of its own: `body` may be a slice of Node's shared pool, which cannot be transferred.
    const bytes = new Uint8Array(body.length);
    bytes.set(body);
    this.pending++;
    this.batch.bodies.push(bytes.buffer);
    this.batch.intents.push(intent);
    if (this.batch.bodies.length >= FLUSH_AT_COPIES) {
      if (!this.flushSoon) {
        this.flushSoon = true;
        setImmediate(() => this.flush(worker));
      }
    } else if (this.flushTimer === null) {
      this.flushTimer = setTimeout(() => this.flush(worker), FLUSH_AFTER_MS);
    }
  }

  /** On the forwarding loop: a request whose body was too large to hold; counted if it would have been copied. */
  offerTooLarge(): void {
    if (this.samples()) this.counts.copiesTooLarge++;
  }

  private samples(): boolean {
    return this.enabled && Date.now() >= this.counts.pausedUntil && Math.random() < this.options.sampleRate;
  }

  /**
   * Hands the waiting copies to `worker`; one message costs both threads less than one per copy.
   * A batch of a thread that died meanwhile was cleared by `onExit` (counted there).
   */
  private flush(worker: Worker): void {
    this.flushSoon = false;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const batch = this.batch;
    if (batch.bodies.length === 0 || worker !== this.worker) return;
    this.batch = { type: 'copies', bodies: [], intents: [] };
    worker.postMessage(batch, batch.bodies);
  }

  stats(): MirrorCounts {
    return { ...this.counts, mirroring: this.enabled, copyThreadUp: this.readyNow };
  }

  /**
   * The kill switch. Off: no copy is handed over after this call, the thread is ended (copies on
   * their way are abandoned, counted dropped) and the promise resolves once it is gone. On:
   * starts a thread and resolves once it is ready.
   */
  async setMirroring(enabled: boolean): Promise<void> {
    if (this.closed || enabled === this.enabled) return;
    this.enabled = enabled;
    if (!enabled) {
      this.cancelRestart();
      await this.end();
      return;
    }
    await this.spawn();
  }

  /** Ends the thread as a crash would (it is restarted after the backoff). For operators and tests. */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.enabled = false;
    this.cancelRestart();
    await this.end();
  }

  private spawn(): Promise<void> {
    const { url, token, copyTimeoutMs, pauseOnNotLiveMs, rules } = this.options;
    const workerData: MirrorWorkerData = { url, token, copyTimeoutMs, pauseOnNotLiveMs, rules };
    let worker: Worker;
    try {
      worker = startWorkerThread(__dirname, 'mirror.worker', workerData);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    // The gateway's server keeps the process alive; the thread alone must not.
    worker.unref();
    this.worker = worker;
    this.readyNow = false;
    this.pending = 0;
    const ready = new Promise<void>((resolve, reject) => (this.whenReady = { resolve, reject }));
    worker.on('message', (report: MirrorReport) => this.onReport(worker, report));
    worker.on('error', (error) => this.onExit(worker, `mirror worker crashed: ${error.message}`));
    worker.on('exit', (code) => this.onExit(worker, `mirror worker exited (code ${code})`));
    return ready;
  }

  private onReport(worker: Worker, report: MirrorReport): void {
    if (worker !== this.worker) return; // a late report of a thread already ended
    if (report.type === 'ready') {
      this.readyNow = true;
      this.readySince = Date.now();
      this.whenReady?.resolve();
      this.whenReady = null;
      return;
    }
    this.pending -= report.copied + report.failed + report.skipped;
    this.counts.copied += report.copied;
    this.counts.copiesFailed += report.failed;
    this.counts.pausedUntil = Math.max(this.counts.pausedUntil, report.pausedUntil);
  }

  /** 'error' is followed by 'exit': one death, handled once. */
  private onExit(worker: Worker, why: string): void {
    if (worker !== this.worker) return;
    this.worker = null;
    this.readyNow = false;
    const lost = this.pending; // the batch not yet posted included
    this.pending = 0;
    this.batch = { type: 'copies', bodies: [], intents: [] };
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.whenReady?.reject(new Error(why));
    this.whenReady = null;
    if (!this.enabled) {
      this.counts.copiesDropped += lost; // ended on purpose: the kill switch or close()
      return;
    }
    this.counts.copiesFailed += lost;
    this.counts.copyWorkerDeaths++;
    if (this.readySince > 0 && Date.now() - this.readySince >= STABLE_AFTER_MS) this.consecutiveDeaths = 0;
    this.readySince = 0;
    this.consecutiveDeaths++;
    const backoff = this.options.restartBackoffMs ?? defaultRestartBackoffMs;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      // A thread that dies while starting is handled by onExit again (and restarted later).
      if (this.enabled && !this.closed) this.spawn().catch(() => undefined);
    }, backoff(this.consecutiveDeaths));
    this.restartTimer.unref();
  }

  private cancelRestart(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
  }

  private async end(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    // Its last report first (reports are coalesced: copies made in the last 50 ms would count
    // dropped), waited for at most END_REPORT_MS: a stuck thread is ended all the same.
    if (this.readyNow) {
      await new Promise<void>((resolve) => {
        let timer: NodeJS.Timeout | null = null;
        const done = (): void => {
          if (timer !== null) clearTimeout(timer);
          worker.off('message', done);
          resolve();
        };
        timer = setTimeout(done, END_REPORT_MS);
        worker.on('message', done);
        worker.postMessage({ type: 'report' } satisfies MirrorReportCommand);
      });
    }
    // Resolves after 'exit', whose handler (onExit) counted the pending copies as dropped.
    await worker.terminate();
  }
}
