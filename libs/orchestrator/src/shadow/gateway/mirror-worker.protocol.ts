import type { RedactionRules } from '@fathom/contracts';

/** Messages between `MirrorThread` (the gateway's forwarding loop) and `mirror.worker` (the copy thread). */

export interface MirrorWorkerData {
  /** The mirror receiver, and the bearer token it wants (if any). */
  readonly url: string;
  readonly token: string | null;
  /**
   * A copy is abandoned (counted failed) when the receiver does not take the connection, or does
   * not answer once the copy is sent, within this, ms.
   */
  readonly copyTimeoutMs: number;
  /** After the receiver answered 404, copying pauses this long, ms. */
  readonly pauseOnNotLiveMs: number;
  readonly rules: RedactionRules;
}

/**
 * Main -> worker: the request bodies to copy that one turn of the forwarding loop offered.
 * `bodies` are transferred (the worker owns them); `intents[i]` is the `x-fathom-intent` header
 * of the request of `bodies[i]` (repeats joined by ", "), null without one.
 */
export interface MirrorCopiesCommand {
  readonly type: 'copies';
  readonly bodies: ArrayBuffer[];
  readonly intents: Array<string | null>;
}

/**
 * Main -> worker, before the thread is ended on purpose (kill switch, close): report what settled
 * now (a `settled` report even if nothing did), so copies made are not counted dropped.
 */
export interface MirrorReportCommand {
  readonly type: 'report';
}

export type MirrorCommand = MirrorCopiesCommand | MirrorReportCommand;

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
