/**
 * Worker-thread entry of `MirrorThread`: for each request body the gateway hands over, parses
 * it, redacts it (`redactDeep` with the rules of `workerData`), and posts it to the mirror
 * receiver; reports what settled, coalesced per turn of this thread's event loop. All of it may
 * take this thread's time; none of it is the forwarding loop's.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { request } from 'undici';
import { compileRedactor, redactDeep } from '../redaction.util';
import type { MirrorCopyCommand, MirrorReport, MirrorWorkerData } from './mirror-worker.protocol';

const port = parentPort;
if (!port) throw new Error('mirror.worker runs only as a worker thread');
const data = workerData as MirrorWorkerData;
const redact = compileRedactor(data.rules);
const authorization = data.token ? { authorization: `Bearer ${data.token}` } : {};

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
let reportQueued = false;

function report(): void {
  reportQueued = false;
  const message: MirrorReport = { type: 'settled', ...tally, pausedUntil };
  tally.copied = tally.failed = tally.skipped = 0;
  port!.postMessage(message);
}

function settled(outcome: keyof typeof tally): void {
  tally[outcome]++;
  if (!reportQueued) {
    reportQueued = true;
    setImmediate(report);
  }
}

function copy({ body, intent }: MirrorCopyCommand): void {
  if (Date.now() < pausedUntil) return settled('skipped');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    return settled('skipped'); // not JSON: the primary will say so to the caller; nothing to compare
  }
  request(data.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...authorization,
      ...(intent !== null ? { 'x-fathom-intent': intent } : {}),
    },
    body: JSON.stringify(redactDeep(parsed, redact)),
    signal: AbortSignal.timeout(data.copyTimeoutMs),
  })
    .then(async (answer) => {
      await answer.body.dump();
      if (answer.statusCode === 202) return settled('copied');
      if (answer.statusCode === 404) pausedUntil = Date.now() + data.pauseOnNotLiveMs;
      settled('failed');
    })
    .catch(() => settled('failed'));
}

port.on('message', copy);
port.postMessage({ type: 'ready' } satisfies MirrorReport);
