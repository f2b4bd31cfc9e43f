import type { RedactionRules } from '@fathom/contracts';

/** Messages between `MirrorThread` (the gateway's forwarding loop) and `mirror.worker` (the copy thread). */

export interface MirrorWorkerData {
  /** The mirror receiver, and the bearer token it wants (if any). */
  readonly url: string;
  readonly token: string | null;
  /** A copy not accepted within this is abandoned (counted failed), ms. */
  readonly copyTimeoutMs: number;
  /** After the receiver answered 404, copying pauses this long, ms. */
  readonly pauseOnNotLiveMs: number;
  readonly rules: RedactionRules;
}

/**
 * Main -> worker: one request body to copy. `body` is transferred (the worker owns it); `intent`
 * is the caller's `x-fathom-intent` header when it had exactly one.
 */
export interface MirrorCopyCommand {
  readonly type: 'copy';
  readonly body: ArrayBuffer;
  readonly intent: string | null;
}

/**
 * Worker -> main. `ready` once its code is loaded (copies are posted only after it). `settled`
 * sums the copies that ended since the last report (at most one report per turn of the worker's
 * event loop): accepted (202), failed (other status, unreachable, timed out) and skipped (not
 * JSON, or arrived while paused: not counted, as before the thread); `pausedUntil` is the latest
 * pause the receiver asked for (epoch ms, 0 for none).
 */
export type MirrorReport =
  | { readonly type: 'ready' }
  | {
      readonly type: 'settled';
      readonly copied: number;
      readonly failed: number;
      readonly skipped: number;
      readonly pausedUntil: number;
    };
