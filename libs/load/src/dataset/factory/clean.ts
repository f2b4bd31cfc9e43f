/** Bounds of a kept item, in words. */
export interface CleanOptions {
  minWords: number;
  maxWords: number;
}

export interface CleanResult {
  items: string[];
  dropped: { empty: number; duplicate: number; tooShort: number; tooLong: number };
  /** Raw units read (paragraphs, or lines when the corpus has no blank line). */
  read: number;
}

/**
 * Raw corpus -> cleaned items. Units are paragraphs (split on blank lines), or lines when the
 * corpus has no blank line. Each is NFKC-normalised, stripped of control and zero-width
 * characters, whitespace-collapsed; empty, duplicate (case-insensitive), too short and too long
 * units are dropped and counted.
 */
export function cleanCorpus(raw: string, options: CleanOptions): CleanResult {
  const text = raw.replace(/\r\n?/g, '\n');
  const units = /\n[ \t]*\n/.test(text) ? text.split(/\n[ \t]*\n/) : text.split('\n');
  const dropped = { empty: 0, duplicate: 0, tooShort: 0, tooLong: 0 };
  const seen = new Set<string>();
  const items: string[] = [];
  for (const unit of units) {
    const cleaned = cleanText(unit);
    if (cleaned === '') {
      dropped.empty++;
      continue;
    }
    const key = cleaned.toLowerCase();
    if (seen.has(key)) {
      dropped.duplicate++;
      continue;
    }
    seen.add(key);
    const words = cleaned.split(' ').length;
    if (words < options.minWords) dropped.tooShort++;
    else if (words > options.maxWords) dropped.tooLong++;
    else items.push(cleaned);
  }
  return { items, dropped, read: units.length };
}

/** NFKC, control and zero-width characters to spaces, whitespace collapsed and trimmed. */
export function cleanText(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[\p{Cc}\p{Cf}]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
