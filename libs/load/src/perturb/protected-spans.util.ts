/** A piece of a prompt: `protected` pieces (quoted strings, comments) must come out verbatim. */
export interface Segment {
  text: string;
  protected: boolean;
}

/**
 * Splits text into free and protected segments. Protected: "...", `...`, '...' (an apostrophe
 * inside a word, as in don't, does not open a quote), // line comments, /* block comments *\/ and
 * <!-- html comments -->. An unterminated quote or comment protects the rest of the text: when in
 * doubt, do not touch.
 */
export function splitProtected(text: string): Segment[] {
  const segments: Segment[] = [];
  let free = '';
  let i = 0;
  const pushProtected = (end: number) => {
    if (free) segments.push({ text: free, protected: false });
    free = '';
    segments.push({ text: text.slice(i, end), protected: true });
    i = end;
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === '`' || (c === "'" && !/[\p{L}\p{N}]/u.test(text[i - 1] ?? ''))) {
      const close = text.indexOf(c, i + 1);
      pushProtected(close === -1 ? text.length : close + 1);
    } else if (text.startsWith('//', i)) {
      const close = text.indexOf('\n', i);
      pushProtected(close === -1 ? text.length : close);
    } else if (text.startsWith('/*', i)) {
      const close = text.indexOf('*/', i + 2);
      pushProtected(close === -1 ? text.length : close + 2);
    } else if (text.startsWith('<!--', i)) {
      const close = text.indexOf('-->', i + 4);
      pushProtected(close === -1 ? text.length : close + 3);
    } else {
      free += c;
      i++;
    }
  }
  if (free) segments.push({ text: free, protected: false });
  return segments;
}
