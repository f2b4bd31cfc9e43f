import { isUtf8 } from 'node:buffer';

/**
 * Incremental decoder for `text/event-stream` (WHATWG HTML "server-sent events", section 9.2.6).
 *
 * Contract: `push(chunk)` takes text exactly as it arrived (any split, even inside a CRLF or a
 * field name) and returns the `data` payloads of the events it completed, in order. `end()`
 * flushes a last event that had no blank line after it (a truncated stream or a file without a
 * trailing newline). Multi-line data is joined with `\n`; comments (`:` keep-alives), `event:`,
 * `id:`, `retry:` and unknown fields are accepted and do not produce payloads; an event whose
 * data is empty is not dispatched (as the standard says). A leading byte-order mark is dropped.
 *
 * Hot path: one instance per stream, called for every network chunk of 200+ concurrent
 * streams, so lines are found with `indexOf` rather than per-character loops and a complete
 * line is never copied twice. Not thread-shared; one owner.
 */
export class SseDecoder {
  /** Incomplete last line of the previous chunk(s). */
  private pending = '';
  /** The previous chunk ended in CR: a LF at the start of the next one belongs to it. */
  private skipLeadingLf = false;
  private dataLines: string[] = [];
  private started = false;
  private lastEventType = '';
  private lastEventId = '';
  /**
   * Streaming UTF-8 decoder, made only when a chunk is not complete valid UTF-8 (a sequence split
   * across chunks, or invalid bytes); kept from then on so its carried bytes stay in order.
   */
  private utf8: InstanceType<typeof TextDecoder> | null = null;
  private invalidUtf8 = 0;
  private sawBytes = false;

  /** `event:` field of the last dispatched event ('' when none). */
  get eventType(): string {
    return this.lastEventType;
  }

  /** `id:` field last seen, as the standard keeps it across events. */
  get eventId(): string {
    return this.lastEventId;
  }

  /** How many U+FFFD replacement characters came from invalid UTF-8 bytes fed to `pushBytes`. */
  get invalidUtf8Sequences(): number {
    return this.invalidUtf8;
  }

  /**
   * Same as `push`, for raw network bytes: UTF-8 sequences split across chunks are joined, and
   * invalid bytes become U+FFFD (counted in `invalidUtf8Sequences`) instead of throwing.
   */
  pushBytes(bytes: Uint8Array): string[] {
    // Fast path (nearly every network chunk): complete, valid UTF-8 decodes in one native pass
    // with nothing carried and nothing replaced.
    // The first bytes go to TextDecoder when they open with a BOM (it drops one, as before).
    if (bytes.length === 0) return [];
    if (this.utf8 === null && (this.sawBytes || bytes[0] !== 0xef) && isUtf8(bytes)) {
      this.sawBytes = true;
      return this.push(utf8Text(bytes));
    }
    // Made mid-stream, it must not take the next EF BB BF for an opening BOM.
    this.utf8 ??= new TextDecoder('utf-8', { fatal: false, ignoreBOM: this.sawBytes });
    this.sawBytes = true;
    const text = this.utf8.decode(bytes, { stream: true });
    this.countReplacements(bytes, text);
    return this.push(text);
  }

  push(chunk: string): string[] {
    const out: string[] = [];
    if (chunk.length === 0) return out;
    let text = chunk;
    if (!this.started) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    if (this.skipLeadingLf) {
      this.skipLeadingLf = false;
      if (text.charCodeAt(0) === 10) start = 1;
    }
    const length = text.length;
    // Next CR and LF at or after `start`, re-searched only once passed: linear in the chunk.
    let lf = text.indexOf('\n', start);
    let cr = text.indexOf('\r', start);
    while (start < length) {
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        end = cr;
        if (cr + 1 < length) {
          next = cr + 1 === lf ? cr + 2 : cr + 1;
        } else {
          next = length;
          this.skipLeadingLf = true;
        }
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        this.pending += text.slice(start);
        return out;
      }
      if (this.pending.length === 0) {
        // Fast path, the usual line: `data: VALUE` whole in this chunk; the value is cut from the
        // chunk once (no intermediate line string).
        if (end - start > 5 && text.startsWith('data:', start)) {
          this.dataLines.push(text.slice(text.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end));
        } else if (end === start) {
          this.dispatch(out);
        } else {
          this.processLine(text.slice(start, end), out);
        }
      } else {
        const line = this.pending + text.slice(start, end);
        this.pending = '';
        this.processLine(line, out);
      }
      start = next;
    }
    return out;
  }

  /** Flushes: the last line without a terminator, then the event it belongs to. */
  end(): string[] {
    const out: string[] = [];
    const tail = this.utf8 === null ? '' : this.utf8.decode();
    if (tail.length > 0) {
      this.invalidUtf8 += countChar(tail, 0xfffd);
      out.push(...this.push(tail));
    }
    if (this.pending.length > 0) {
      const line = this.pending;
      this.pending = '';
      this.processLine(line, out);
    }
    this.dispatch(out);
    this.skipLeadingLf = false;
    return out;
  }

  private processLine(line: string, out: string[]): void {
    if (line.length === 0) {
      this.dispatch(out);
      return;
    }
    const first = line.charCodeAt(0);
    if (first === 58 /* ':' comment / keep-alive */) return;
    // Fast path for the one field that matters.
    if (first === 100 /* d */ && line.startsWith('data')) {
      if (line.length === 4) {
        this.dataLines.push('');
        return;
      }
      if (line.charCodeAt(4) === 58) {
        this.dataLines.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
        return;
      }
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.lastEventType = value;
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
    // `retry` and unknown fields (or stray lines such as captured HTTP headers) are ignored.
  }

  private dispatch(out: string[]): void {
    if (this.dataLines.length === 0) return;
    const data = this.dataLines.length === 1 ? this.dataLines[0] : this.dataLines.join('\n');
    this.dataLines.length = 0;
    if (data.length > 0) out.push(data);
  }

  private countReplacements(bytes: Uint8Array, text: string): void {
    // A genuine U+FFFD in the input is EF BF BD; count only replacements the decoder made.
    if (text.indexOf('\ufffd') === -1) return;
    const decoded = countChar(text, 0xfffd);
    if (decoded === 0) return;
    let genuine = 0;
    for (let i = 0; i + 2 < bytes.length; i++) {
      if (bytes[i] === 0xef && bytes[i + 1] === 0xbf && bytes[i + 2] === 0xbd) genuine++;
    }
    this.invalidUtf8 += Math.max(0, decoded - genuine);
  }
}

function utf8Text(bytes: Uint8Array): string {
  return (
    Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  ).toString('utf8');
}

function countChar(text: string, code: number): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === code) n++;
  return n;
}
