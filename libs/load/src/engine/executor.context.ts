import type { Histogram } from 'hdr-histogram-js';
import type { PromptItem } from '../dataset/prompt-item';
import type { DriverOutcome } from '../driver/request-outcome';
import type { Sleeper } from './sleeper';

/**
 * What an executor sees of its shard's run (k6's split): an executor decides *when* a request
 * starts and nothing else. Sending, timeouts, accounting and windows belong to the run.
 * - `fire` resolves once the request has finished and been accounted; it never rejects.
 * - `stopped` turns true once (duration over or abort) and stays true: start nothing more.
 * - `sleeper` sleeps are woken at once when the run stops.
 */
export interface ExecutorContext {
  readonly shard: { readonly index: number; readonly count: number };
  readonly stopped: boolean;
  /** Requests outstanding now (started, not yet accounted). */
  readonly inFlight: number;
  readonly sleeper: Sleeper;
  /** Sends one iteration intended at `intendedMono` (performance.now() ms), planned or drawn. */
  fire(intendedMono: number, planned?: PromptItem): Promise<DriverOutcome>;
  /** Resolves when a request finishes (or the run stops). */
  waitForSlot(): Promise<void>;
  /** Open model: the iteration intended at `intendedMono` started later than its tolerance. */
  countLate(intendedMono: number): void;
  /** Open model: the iteration intended at `intendedMono` was not sent. */
  countDropped(intendedMono: number): void;
  /** Open model: `n` iterations the schedule still held when the load ended. */
  countMissed(n: number): void;
}

/** The adaptive executor also steers the run: it reads latency and GPU memory, and scales inputs. */
export interface AdaptiveExecutorContext extends ExecutorContext {
  /** Starts recording successful requests' `metric` into the returned histogram (until untapped). */
  tapLatency(metric: 'ttft' | 'e2e'): Histogram;
  untapLatency(): void;
  /** The GPU memory reading (bytes) if the run has a gauge. */
  readGpuMemory(): number | null;
  /** Scales the prompt inputs drawn from now on (1 = as the dataset says). */
  setInputScale(scale: number): void;
}

/** Resolves in a later macrotask (after the event loop's next poll for I/O). */
export function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
