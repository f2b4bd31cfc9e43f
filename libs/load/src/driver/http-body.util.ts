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
