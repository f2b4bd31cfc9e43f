/**
 * A response body's text from bytes that arrive in pieces. A piece that ends on an ASCII byte
 * is decoded when it comes, straight from the caller's buffer (no copy): UTF-8 decoding starts
 * afresh after an ASCII byte (never part of a multi-byte sequence, valid or not), so the texts of
 * such pieces joined equal the text of their bytes joined. From the first piece that ends
 * otherwise, the pieces are kept as bytes and decoded together by `text()`.
 * The usual non-streamed answer is one piece ending in `}`: one decode, no Buffer allocated.
 */
export class Utf8BodyText {
  /** Bytes taken so far. */
  bytes = 0;
  private decoded = '';
  private readonly pending: Buffer[] = [];

  /** Takes `bytes[start, end)`, which is valid only during this call (copied when kept). */
  add(bytes: Buffer, start: number, end: number): void {
    if (end <= start) return;
    this.bytes += end - start;
    if (this.pending.length === 0 && bytes[end - 1] < 0x80) {
      this.decoded += bytes.toString('utf8', start, end);
      return;
    }
    const copy = Buffer.allocUnsafe(end - start);
    bytes.copy(copy, 0, start, end);
    this.pending.push(copy);
  }

  /** Takes `chunk`, which the caller gives up (kept without a copy). */
  addOwned(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.bytes += chunk.length;
    if (this.pending.length === 0 && chunk[chunk.length - 1] < 0x80) this.decoded += chunk.toString('utf8');
    else this.pending.push(chunk);
  }

  /** The text of every byte taken, as one UTF-8 decode of them all would give it. */
  text(): string {
    const pending = this.pending;
    if (pending.length === 0) return this.decoded;
    return this.decoded + (pending.length === 1 ? pending[0] : Buffer.concat(pending)).toString('utf8');
  }
}
