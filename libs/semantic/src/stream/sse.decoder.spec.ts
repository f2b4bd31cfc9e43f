import fc from 'fast-check';
import { SseDecoder } from './sse.decoder';

function decodeAll(chunks: string[]): string[] {
  const sut = new SseDecoder();
  const out: string[] = [];
  for (const chunk of chunks) out.push(...sut.push(chunk));
  out.push(...sut.end());
  return out;
}

describe(SseDecoder.name, () => {
  it('returns the data of each complete event and holds back an incomplete one', () => {
    const sut = new SseDecoder();
    expect(sut.push('data: {"a":1}\n\ndata: {"b"')).toEqual(['{"a":1}']);
    expect(sut.push(':2}\n\n')).toEqual(['{"b":2}']);
  });

  it('joins multi-line data with \\n and strips exactly one leading space', () => {
    expect(decodeAll(['data: line1\ndata:line2\ndata:  two spaces\n\n'])).toEqual([
      'line1\nline2\n two spaces',
    ]);
  });

  it('accepts CRLF, CR and LF line endings, even a CRLF split across chunks', () => {
    expect(decodeAll(['data: a\r\n\r\ndata: b\r\r', 'data: c\n\n'])).toEqual(['a', 'b', 'c']);
    expect(decodeAll(['data: a\r', '\n\r', '\ndata: b\r', '\n', '\r\n'])).toEqual(['a', 'b']);
  });

  it('ignores comments, keep-alives, event/id/retry fields and stray lines', () => {
    const text = ': keep-alive\n\nevent: message\nid: 7\nretry: 100\nHTTP/1.1 200 OK\ndata: x\n\n:\n\n';
    const sut = new SseDecoder();
    expect(sut.push(text)).toEqual(['x']);
    expect(sut.eventType).toBe('message');
    expect(sut.eventId).toBe('7');
  });

  it('does not dispatch an event whose data is empty', () => {
    expect(decodeAll(['data:\n\ndata\n\nevent: ping\n\n'])).toEqual([]);
  });

  it('flushes a last event without a trailing blank line on end()', () => {
    const sut = new SseDecoder();
    expect(sut.push('data: [DONE]')).toEqual([]);
    expect(sut.end()).toEqual(['[DONE]']);
  });

  it('drops a leading byte-order mark', () => {
    expect(decodeAll(['\ufeffdata: x\n\n'])).toEqual(['x']);
  });

  it('decodes UTF-8 split across byte chunks and counts invalid bytes instead of throwing', () => {
    const bytes = Buffer.from('data: héllo €\n\n', 'utf8');
    const sut = new SseDecoder();
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i++) out.push(...sut.pushBytes(bytes.subarray(i, i + 1)));
    out.push(...sut.end());
    expect(out).toEqual(['héllo €']);
    expect(sut.invalidUtf8Sequences).toBe(0);

    const broken = new SseDecoder();
    const payloads = [
      ...broken.pushBytes(Uint8Array.from([...Buffer.from('data: a'), 0xff, 0xfe, ...Buffer.from('\n\n')])),
    ];
    expect(payloads).toEqual(['a\ufffd\ufffd']);
    expect(broken.invalidUtf8Sequences).toBe(2);
  });

  it('gives the same payloads however the text is split (property)', () => {
    const field = fc.constantFrom('data: ', 'data:', ': ', 'event: ', 'id: ', 'retry: ');
    const value = fc.string({ unit: fc.constantFrom('a', 'b', '{', '}', '"', ' ', 'é', '€', ':') });
    const eol = fc.constantFrom('\n', '\r\n', '\r');
    const line = fc.tuple(field, value, eol).map(([f, v, e]) => f + v + e);
    const event = fc.tuple(fc.array(line, { maxLength: 4 }), eol).map(([lines, e]) => lines.join('') + e);
    const stream = fc.array(event, { maxLength: 8 }).map((events) => events.join(''));
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 12 }), (text, cuts) => {
        const points = [...new Set(cuts.map((c) => (text.length === 0 ? 0 : c % text.length)))].sort(
          (a, b) => a - b,
        );
        const chunks: string[] = [];
        let previous = 0;
        for (const p of points) {
          chunks.push(text.slice(previous, p));
          previous = p;
        }
        chunks.push(text.slice(previous));
        expect(decodeAll(chunks)).toEqual(decodeAll([text]));
      }),
      { numRuns: 300 },
    );
  });

  it('matches a reference line splitter on generated streams (property)', () => {
    // Reference: split on CRLF|CR|LF, then the standard's field rules.
    const reference = (text: string): string[] => {
      const out: string[] = [];
      let data: string[] = [];
      const lines = text.split(/\r\n|\r|\n/);
      const complete = /(\r\n|\r|\n)$/.test(text) ? lines.slice(0, -1) : lines;
      for (const l of complete) {
        if (l === '') {
          if (data.length > 0 && data.join('\n') !== '') out.push(data.join('\n'));
          data = [];
        } else if (l.startsWith('data:')) data.push(l.slice(l.startsWith('data: ') ? 6 : 5));
      }
      if (data.length > 0 && data.join('\n') !== '') out.push(data.join('\n'));
      return out;
    };
    const token = fc.constantFrom('data: ', 'data:', 'x', ' ', '\n', '\r\n', '\r', ':', 'id: 1', '{"k":"v"}');
    fc.assert(
      fc.property(fc.array(token, { maxLength: 40 }), (parts) => {
        const text = parts.join('');
        expect(decodeAll([text])).toEqual(reference(text));
      }),
      { numRuns: 500 },
    );
  });
  it('decodes bytes as one streaming TextDecoder would, however they are split (property)', () => {
    // Covers the native fast path for complete valid UTF-8 chunks against the decoder it skips:
    // BOMs at the start, multi-byte characters cut anywhere, invalid bytes.
    const piece = fc.constantFrom(
      [0xef, 0xbb, 0xbf],
      [...Buffer.from('data: ')],
      [...Buffer.from('é€😀', 'utf8')],
      [0x0a],
      [0x0a, 0x0a],
      [0x61],
      [0xff],
      [0xe2, 0x82],
      [0xc3],
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (pieces, cuts) => {
          const bytes = Uint8Array.from(pieces.flat());
          const points = [...new Set(cuts.map((c) => (bytes.length === 0 ? 0 : c % bytes.length)))].sort(
            (a, b) => a - b,
          );
          const sut = new SseDecoder();
          const out: string[] = [];
          let previous = 0;
          for (const p of [...points, bytes.length]) {
            out.push(...sut.pushBytes(bytes.subarray(previous, p)));
            previous = p;
          }
          out.push(...sut.end());
          const text = new TextDecoder('utf-8').decode(bytes);
          expect(out).toEqual(decodeAll([text]));
          const replaced = [...text].filter((ch) => ch === '\ufffd').length;
          expect(sut.invalidUtf8Sequences).toBe(replaced);
        },
      ),
      { numRuns: 500 },
    );
  });
});
