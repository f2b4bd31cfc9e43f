import type { Dispatcher } from 'undici';

/** Reads a response body as text, keeping at most `cap` characters (the rest is consumed, not kept). */
export function readBodyText(body: Dispatcher.ResponseData['body'], cap: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    body.on('data', (chunk: Buffer) => {
      if (text.length < cap) text += chunk.toString('utf8');
    });
    body.on('end', () => resolve(text.length > cap ? text.slice(0, cap) : text));
    body.on('error', reject);
  });
}

/**
 * Like readBodyText, and says whether the body went past `cap` (then `text` is only its first
 * `cap` characters, not a whole document: a caller must not parse it as one).
 */
export function readBody(
  body: Dispatcher.ResponseData['body'],
  cap: number,
): Promise<{ text: string; capped: boolean }> {
  return new Promise((resolve, reject) => {
    let text = '';
    let capped = false;
    body.on('data', (chunk: Buffer) => {
      if (text.length < cap) text += chunk.toString('utf8');
      else capped = true;
    });
    body.on('end', () =>
      resolve(text.length > cap ? { text: text.slice(0, cap), capped: true } : { text, capped }),
    );
    body.on('error', reject);
  });
}

/** A body past the bytes a reader takes: it was cut off, not read whole. */
export class BodyTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`answer over ${Math.round(maxBytes / 1024 / 1024)} MiB: not read further`);
  }
}

/**
 * The whole body as text, when it holds at most `maxBytes`; past that the body is destroyed
 * (the connection closed) and this rejects with BodyTooLarge. For answers that are parsed whole
 * (a models list, a logprobs answer): a target sending without end costs one failed read, not
 * the process's memory until a timeout.
 */
export function readBodyWithin(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    body.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= maxBytes) return void chunks.push(chunk);
      body.destroy();
      reject(new BodyTooLarge(maxBytes));
    });
    body.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    body.on('error', reject);
  });
}
