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
