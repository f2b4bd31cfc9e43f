/**
 * Worker-thread entry of `MirrorThread`: for each request body the gateway hands over, parses
 * it, redacts it (`redactDeep` with the rules of `workerData`), and posts it to the mirror
 * receiver (alone, or with the other copies of its slice in one request to the batch route);
 * reports what settled, coalesced per turn of this thread's event loop. All of it may take this
 * thread's time; none of it is the forwarding loop's.
 *
 * Copies arriving together are queued and made in slices of `SLICE_MS`, this thread sleeping
 * `YIELD_MS` between two (see there), so a forwarding loop that shares its core never waits
 * long for it.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';
import { compileRedactor, redactDeep } from '../redaction.util';
import type { MirrorCommand, MirrorReport, MirrorWorkerData } from './mirror-worker.protocol';

const port = parentPort;
if (!port) throw new Error('mirror.worker runs only as a worker thread');
const data = workerData as MirrorWorkerData;
const redact = compileRedactor(data.rules);
const receiver = new URL(data.url);
const path = `${receiver.pathname}${receiver.search}`;
/** The receiver's batch route (`POST .../mirror/batch`): the copies of one slice in one request. */
const batchPath = `${receiver.pathname.replace(/\/+$/, '')}/batch${receiver.search}`;
/**
 * A batch's most copies, and about its most JSON characters: the orchestrator's JSON body limit
 * is 100 KB. A copy bigger than that alone goes on its own, as every copy did before batches.
 */
const MAX_BATCH_COPIES = 64;
const MAX_BATCH_CHARS = 64 * 1024;
/**
 * Keep-alive connections to the receiver, as many as copies in flight (at most the pending cap).
 * Undici's own timeouts bound a copy, not an AbortSignal per copy: a signal and its timer cost
 * about as much CPU as the POST itself (38 against 18 us per POST, measured on loopback).
 */
const pool = new Pool(receiver.origin, { connect: { timeout: data.copyTimeoutMs } });
const headers: Record<string, string> = {
  'content-type': 'application/json',
  ...(data.token ? { authorization: `Bearer ${data.token}` } : {}),
};

/**
 * This thread yields the core to the forwarding loop: Linux keeps a nice value per thread, and
 * on a one-core gateway the kernel would otherwise share the core evenly, so a forwarded request
 * could wait for a redaction's time slice. On a saturated core copies then wait, reach the cap
 * and are dropped (counted), as the contract wants. Elsewhere (or refused) it is a no-op.
 */
try {
  const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(threadId)) setPriority(threadId, 19);
} catch {
  // not Linux, or /proc not mounted: the thread keeps the process's priority
}

const tally = { copied: 0, failed: 0, skipped: 0 };
let pausedUntil = 0;
let reportSoon = false;
let reportTimer: NodeJS.Timeout | null = null;

/**
 * Settled copies are reported at the end of this thread's turn once this many are unreported
 * (the gateway's pending cap counts them until then), else within `REPORT_AFTER_MS`: at a
 * production rate a report per copy woke the forwarding loop once more per request.
 */
const REPORT_AT_COPIES = 8;
const REPORT_AFTER_MS = 50;

/** `always`: even with nothing settled (the answer to a `report` command). */
function report(always = false): void {
  reportSoon = false;
  if (reportTimer !== null) clearTimeout(reportTimer);
  reportTimer = null;
  if (!always && tally.copied + tally.failed + tally.skipped === 0) return;
  const message: MirrorReport = { type: 'settled', ...tally, pausedUntil };
  tally.copied = tally.failed = tally.skipped = 0;
  port!.postMessage(message);
}

function settled(outcome: keyof typeof tally, copies = 1): void {
  if (copies === 0) return;
  tally[outcome] += copies;
  if (tally.copied + tally.failed + tally.skipped >= REPORT_AT_COPIES) {
    if (!reportSoon) {
      reportSoon = true;
      setImmediate(() => report());
    }
  } else reportTimer ??= setTimeout(() => report(), REPORT_AFTER_MS);
}

/** A body to copy and the caller's intent header. */
interface Copy {
  readonly body: ArrayBuffer;
  readonly intent: string | null;
}

/** A copy parsed and redacted, ready to send. */
interface Redacted {
  readonly json: string;
  readonly intent: string | null;
}

/** Parses and redacts a copy; null (counted skipped) when paused or not JSON. */
function redacted({ body, intent }: Copy): Redacted | null {
  if (Date.now() < pausedUntil) {
    settled('skipped');
    return null;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    settled('skipped'); // not JSON: the primary will say so to the caller; nothing to compare
    return null;
  }
  return { json: JSON.stringify(redactDeep(parsed, redact)), intent };
}

/** How many of a batch the receiver's 202 says it took (`{"accepted": n}`); all when it does not say. */
function acceptedOf(text: string, copies: number): number {
  try {
    const accepted = (JSON.parse(text) as { accepted?: unknown }).accepted;
    return typeof accepted === 'number' && Number.isInteger(accepted)
      ? Math.min(copies, Math.max(0, accepted))
      : copies;
  } catch {
    return copies;
  }
}

/**
 * Sends copies: one alone to the mirror route, as a front proxy's mirror does (byte for byte
 * the redacted request, its intent as the `x-fathom-intent` header); several in one request to
 * the batch route. A POST costs this thread about as much as redacting a copy, so a slice's
 * copies go together.
 */
function send(copies: readonly Redacted[]): void {
  if (copies.length === 0) return;
  const one = copies.length === 1 ? copies[0] : null;
  pool
    .request({
      method: 'POST',
      path: one ? path : batchPath,
      headers: one?.intent != null ? { ...headers, 'x-fathom-intent': one.intent } : headers,
      body: one
        ? one.json
        : `{"copies":[${copies.map((c) => `{${c.intent !== null ? `"intent":${JSON.stringify(c.intent)},` : ''}"body":${c.json}}`).join(',')}]}`,
      headersTimeout: data.copyTimeoutMs,
      bodyTimeout: data.copyTimeoutMs,
    })
    .then(async (answer) => {
      if (answer.statusCode === 202) {
        const accepted = one ? 1 : acceptedOf(await answer.body.text(), copies.length);
        if (one) await answer.body.dump();
        settled('copied', accepted);
        settled('failed', copies.length - accepted);
        return;
      }
      await answer.body.dump();
      if (answer.statusCode === 404) pausedUntil = Date.now() + data.pauseOnNotLiveMs;
      settled('failed', copies.length);
    })
    .catch(() => settled('failed', copies.length));
}

/**
 * The copy thread's longest stretch on the core, then off it for `YIELD_MS`. Under SCHED_RR
 * (timeslice 100 ms) a forwarding thread woken on this core waits until this thread blocks:
 * draining a backlog up to the pending cap took it milliseconds. A sleep is the only way a Node
 * thread has to hand the core over (no sched_yield); `Atomics.wait` sleeps 50 us where a timer
 * sleeps 1 ms at least, but costs about 20 us of CPU a pause (measured). One copy takes 10-40
 * us, so a slice makes a few. Bench (sample rate 1, RR): 0.05 ms slices dropped 40-60 % of the
 * copies for no clear P99 gain; 0.2 ms dropped 1-5 %.
 */
const SLICE_MS = 0.2;
const YIELD_MS = 0.05;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const queue: Copy[] = [];
let draining = false;

/**
 * One slice of the queued copies per turn of this thread's event loop (so the receiver's
 * answers are read and reports go out between slices); between two slices, a pause.
 */
function drain(): void {
  const until = performance.now() + SLICE_MS;
  let batch: Redacted[] = [];
  let chars = 0;
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const copy = redacted(next);
    if (copy !== null) {
      if (
        batch.length > 0 &&
        (batch.length >= MAX_BATCH_COPIES || chars + copy.json.length > MAX_BATCH_CHARS)
      ) {
        send(batch);
        batch = [];
        chars = 0;
      }
      batch.push(copy);
      chars += copy.json.length;
    }
    if (performance.now() >= until) break;
  }
  send(batch);
  if (queue.length === 0) {
    draining = false;
    return;
  }
  Atomics.wait(sleeper, 0, 0, YIELD_MS);
  setImmediate(drain);
}

port.on('message', (command: MirrorCommand) => {
  if (command.type === 'report') return report(true);
  const { bodies, intents } = command;
  bodies.forEach((body, i) => queue.push({ body, intent: intents[i] }));
  if (!draining) {
    draining = true;
    setImmediate(drain); // after the other messages already here: they join the queue first
  }
});

port.postMessage({ type: 'ready' } satisfies MirrorReport);
