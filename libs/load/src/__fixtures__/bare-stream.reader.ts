import { connect } from 'node:net';

/** One stream as the bare reader saw it: read stamps of its content events, from its send. */
export interface BareStream {
  serverRequestId: string;
  /** performance.now() right before the request's socket write. */
  sentMono: number;
  /** ms from the send to the socket read that carried each content event. */
  chunkOffsetsMs: number[];
}

const CONTENT = '"content":"';

/**
 * The floor of the timing measurement on this machine: `concurrency` closed-loop users, each a
 * fresh socket per request, doing nothing per read but stamp it (performance.now() first thing
 * in Node's `onread` callback) and count the content events in it. No HTTP parser beyond finding
 * the head's end and the simulator's request id, no JSON, no records: whatever timing error it
 * shows against the target's write times is the machine's (scheduling, vCPU wake-up), not a
 * client's. For the simulator's streams only (`"content":"` with a non-empty value marks a token;
 * a pattern split across reads is found in the carried tail).
 */
export async function runBareStreams(options: {
  url: string;
  concurrency: number;
  durationMs: number;
  body: string;
}): Promise<Map<string, BareStream>> {
  const target = new URL(options.url);
  const streams = new Map<string, BareStream>();
  const endAt = performance.now() + options.durationMs;
  const buffer = Buffer.allocUnsafe(64 * 1024);
  let seq = 0;

  const one = (requestId: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const stream: BareStream = { serverRequestId: '', sentMono: 0, chunkOffsetsMs: [] };
      let head = true;
      let carried = '';
      const socket = connect({
        host: target.hostname,
        port: Number(target.port),
        onread: {
          buffer,
          callback: (nread: number, bytes: Buffer): boolean => {
            const at = performance.now() - stream.sentMono;
            let text = carried + bytes.toString('latin1', 0, nread);
            if (head) {
              const end = text.indexOf('\r\n\r\n');
              if (end === -1) {
                carried = text;
                return true;
              }
              stream.serverRequestId = /x-sim-request-id: *(\S+)/i.exec(text.slice(0, end))?.[1] ?? '';
              text = text.slice(end + 4);
              head = false;
            }
            let from = 0;
            for (let k = text.indexOf(CONTENT); k !== -1; k = text.indexOf(CONTENT, from)) {
              if (k + CONTENT.length >= text.length) break; // the value is in the next read
              if (text[k + CONTENT.length] !== '"') stream.chunkOffsetsMs.push(at);
              from = k + CONTENT.length;
            }
            carried = text.slice(Math.max(from, text.length - CONTENT.length));
            if (text.includes('[DONE]')) {
              streams.set(requestId, stream);
              socket.destroy();
              resolve();
            }
            return true;
          },
        },
      });
      socket.setNoDelay(true);
      socket.once('error', reject);
      socket.once('close', () => resolve());
      socket.once('connect', () => {
        const length = Buffer.byteLength(options.body);
        stream.sentMono = performance.now();
        socket.write(
          `POST ${target.pathname}/chat/completions HTTP/1.1\r\nhost: ${target.host}\r\n` +
            `content-type: application/json\r\ncontent-length: ${length}\r\nconnection: close\r\n` +
            `x-fathom-request: ${requestId}\r\n\r\n${options.body}`,
        );
      });
    });

  const user = async (): Promise<void> => {
    while (performance.now() < endAt) await one(`bare-${++seq}`);
  };
  const users: Promise<void>[] = [];
  for (let i = 0; i < options.concurrency; i++) {
    users.push(user());
    await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(users);
  return streams;
}
