import fc from 'fast-check';
import { Http1Error } from './http1.error';
import { Http1ResponseParser, MAX_HEAD_BYTES, type Http1ResponseSink } from './http1-response.parser';

/** What a parse produced: head, body bytes, where the response ended. */
interface Parsed {
  heads: { status: number; requestId: string | undefined }[];
  body: Buffer;
  complete: boolean;
  keepAlive: boolean;
  /** Index in the whole input where the response ended (-1: not complete). */
  endAt: number;
}

class Collector implements Http1ResponseSink {
  heads: { status: number; requestId: string | undefined }[] = [];
  retryAfters: (string | undefined)[] = [];
  parts: Buffer[] = [];
  onResponseHead(status: number, requestId: string | undefined, retryAfter?: string): void {
    this.heads.push({ status, requestId });
    this.retryAfters.push(retryAfter);
  }
  onResponseBody(bytes: Buffer, start: number, end: number): void {
    // Copied: the parser's contract says the bytes are valid only during the call.
    this.parts.push(Buffer.from(bytes.subarray(start, end)));
  }
}

/**
 * Feeds `input` cut at `cuts` (sorted offsets), each piece in its own buffer with stale garbage
 * after it (as the shared onread buffer has), then `finish()` when `eof`.
 */
function parse(input: Buffer, cuts: number[] = [], eof = false): Parsed {
  const sink = new Collector();
  const sut = new Http1ResponseParser(sink);
  const bounds = [0, ...cuts.filter((c) => c > 0 && c < input.length), input.length];
  let endAt = -1;
  for (let i = 0; i + 1 < bounds.length && endAt === -1; i++) {
    const piece = input.subarray(bounds[i], bounds[i + 1]);
    const buf = Buffer.concat([piece, Buffer.from('\r\n\r\n0\r\n\r\nHTTP/1.1 999 stale\r\n\r\n')]);
    const pos = sut.execute(buf, 0, piece.length, 0);
    if (sut.complete) endAt = bounds[i] + pos;
  }
  if (endAt === -1 && eof && sut.finish()) endAt = input.length;
  return {
    heads: sink.heads,
    body: Buffer.concat(sink.parts),
    complete: sut.complete,
    keepAlive: sut.keepAlive,
    endAt,
  };
}

function parseError(input: string | Buffer, cuts: number[] = []): Http1Error {
  try {
    parse(typeof input === 'string' ? Buffer.from(input, 'latin1') : input, cuts);
  } catch (error) {
    if (error instanceof Http1Error) return error;
    throw error;
  }
  throw new Error('parsed without an error');
}

type Framing = 'length' | 'chunked' | 'close';

interface ResponseSpec {
  status: number;
  framing: Framing;
  body: Uint8Array;
  chunkSizes: number[];
  extensions: boolean;
  trailers: boolean;
  interim: boolean;
  requestId: string | null;
  connectionClose: boolean;
  upperCase: boolean[];
}

const responseSpec: fc.Arbitrary<ResponseSpec> = fc.record({
  status: fc.integer({ min: 200, max: 599 }).filter((s) => s !== 204 && s !== 304),
  framing: fc.constantFrom<Framing>('length', 'chunked', 'close'),
  body: fc.uint8Array({ maxLength: 600 }),
  chunkSizes: fc.array(fc.integer({ min: 1, max: 80 }), { minLength: 1, maxLength: 8 }),
  extensions: fc.boolean(),
  trailers: fc.boolean(),
  interim: fc.boolean(),
  requestId: fc.option(fc.stringMatching(/^[a-z0-9-]{1,20}$/), { nil: null }),
  connectionClose: fc.boolean(),
  upperCase: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
});

function caseOf(name: string, upper: boolean): string {
  return upper ? name.toUpperCase() : name.replace(/(^|-)([a-z])/g, (m) => m.toUpperCase());
}

/** Chunked coding of `body` with chunks of the given sizes (cycled), optional extensions and trailers. */
function chunked(body: Uint8Array, sizes: number[], extensions: boolean, trailers: boolean): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0, i = 0; at < body.length; i++) {
    const n = Math.min(sizes[i % sizes.length], body.length - at);
    const ext = extensions ? `;ext${i}="v;x"` : '';
    parts.push(
      Buffer.from(`${n.toString(16)}${ext}\r\n`, 'latin1'),
      Buffer.from(body.subarray(at, at + n)),
      Buffer.from('\r\n'),
    );
    at += n;
  }
  parts.push(
    Buffer.from(
      `0${extensions ? ';last' : ''}\r\n${trailers ? 'x-trailer: 1\r\nServer-Timing: a;dur=1\r\n' : ''}\r\n`,
    ),
  );
  return Buffer.concat(parts);
}

function serialise(spec: ResponseSpec): Buffer {
  const u = spec.upperCase;
  let head = spec.interim
    ? 'HTTP/1.1 100 Continue\r\nx-request-id: interim\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n'
    : '';
  head += `HTTP/1.1 ${spec.status} Whatever Reason\r\n${caseOf('content-type', u[0])}: text/event-stream\r\n`;
  if (spec.requestId !== null) head += `${caseOf('x-request-id', u[1])}:${spec.requestId}  \r\n`;
  if (spec.connectionClose) head += `${caseOf('connection', u[2])}: ${u[3] ? 'Close' : 'close'}\r\n`;
  else head += `${caseOf('connection', u[2])}: keep-alive\r\n`;
  if (spec.framing === 'length') head += `${caseOf('content-length', u[4])}: ${spec.body.length}\r\n`;
  if (spec.framing === 'chunked')
    head += `${caseOf('transfer-encoding', u[5])}: ${u[6] ? 'CHUNKED' : 'chunked'}\r\n`;
  head += '\r\n';
  const body =
    spec.framing === 'chunked'
      ? chunked(spec.body, spec.chunkSizes, spec.extensions, spec.trailers)
      : Buffer.from(spec.body);
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

describe(Http1ResponseParser.name, () => {
  it('gives the same status, headers and body for any split of a valid response into reads', () => {
    fc.assert(
      fc.property(
        responseSpec,
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.boolean(),
        (spec, rawCuts, trailingGarbage) => {
          const input = serialise(spec);
          const cuts = [...new Set(rawCuts.map((c) => c % (input.length + 1)))].sort((a, b) => a - b);
          // Bytes after a complete response are not its own: the parser must stop before them.
          const extra =
            trailingGarbage && spec.framing !== 'close'
              ? Buffer.from('HTTP/1.1 200 OK\r\n\r\n')
              : Buffer.alloc(0);
          const sut = parse(Buffer.concat([input, extra]), cuts, spec.framing === 'close');
          expect(sut.heads).toEqual([{ status: spec.status, requestId: spec.requestId ?? undefined }]);
          expect(sut.body.equals(Buffer.from(spec.body))).toBe(true);
          expect(sut.complete).toBe(true);
          expect(sut.endAt).toBe(input.length);
          expect(sut.keepAlive).toBe(!spec.connectionClose && spec.framing !== 'close');
        },
      ),
      { numRuns: 400 },
    );
  });

  it('round-trips chunked bodies: any chunk sizes, any read splits, the same bytes', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 2000 }),
        fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 64 }),
        (body, sizes, readSize) => {
          const input = Buffer.concat([
            Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'),
            chunked(body, sizes, false, false),
          ]);
          const cuts: number[] = [];
          for (let at = readSize; at < input.length; at += readSize) cuts.push(at);
          const sut = parse(input, cuts);
          expect(sut.complete).toBe(true);
          expect(sut.body.equals(Buffer.from(body))).toBe(true);
        },
      ),
    );
  });

  it('reads a body until the connection closes when there is neither Content-Length nor chunked coding', () => {
    const input = Buffer.from('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it');
    const open = parse(input);
    expect(open.complete).toBe(false);
    const closed = parse(input, [20, 50], true);
    expect(closed.complete).toBe(true);
    expect(closed.body.toString()).toBe('all of it');
    expect(closed.keepAlive).toBe(false);
  });

  it('reads no body for 204 and 304 and keeps the connection', () => {
    for (const status of [204, 304]) {
      const sut = parse(Buffer.from(`HTTP/1.1 ${status} X\r\ncontent-type: a\r\n\r\n`));
      expect(sut.complete).toBe(true);
      expect(sut.body.length).toBe(0);
      expect(sut.keepAlive).toBe(true);
    }
  });

  it('keeps HTTP/1.0 connections only with Connection: keep-alive; HTTP/1.1 ones unless Connection: close', () => {
    const keep = (head: string) => parse(Buffer.from(`${head}content-length: 0\r\n\r\n`)).keepAlive;
    expect(keep('HTTP/1.0 200 OK\r\n')).toBe(false);
    expect(keep('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n')).toBe(true);
    expect(keep('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(keep('HTTP/1.1 200 OK\r\nconnection: upgrade, close\r\n')).toBe(false);
    expect(keep('HTTP/1.1 200\r\n')).toBe(true);
  });

  it('hands over the Retry-After header of each response, and none when it has none', () => {
    const sink = new Collector();
    const sut = new Http1ResponseParser(sink);
    const first = Buffer.from(
      'HTTP/1.1 429 Too Many Requests\r\nRETRY-AFTER: 7\r\ncontent-length: 0\r\n\r\n',
    );
    sut.execute(first, 0, first.length, 0);
    sut.reset();
    const second = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
    sut.execute(second, 0, second.length, 0);
    expect(sink.heads.map((h) => h.status)).toEqual([429, 200]);
    expect(sink.retryAfters).toEqual(['7', undefined]);
  });

  it('prefers x-request-id over x-sim-request-id in either order', () => {
    const id = (headers: string) =>
      parse(Buffer.from(`HTTP/1.1 200 OK\r\n${headers}content-length: 0\r\n\r\n`)).heads[0].requestId;
    expect(id('x-sim-request-id: sim\r\nX-Request-Id: real\r\n')).toBe('real');
    expect(id('x-request-id: real\r\nx-sim-request-id: sim\r\n')).toBe('real');
    expect(id('X-Sim-Request-Id: sim\r\n')).toBe('sim');
    expect(id('')).toBeUndefined();
  });

  it.each([
    ['an empty status line', '\r\n\r\n'],
    ['a non-HTTP status line', 'ICY 200 OK\r\n\r\n'],
    ['HTTP/2 in a status line', 'HTTP/2.0 200 OK\r\n\r\n'],
    ['a two-digit status', 'HTTP/1.1 20 OK\r\n\r\n'],
    ['a status without a space before it', 'HTTP/1.1200 OK\r\n\r\n'],
    ['a status followed by a letter', 'HTTP/1.1 200OK\r\n\r\n'],
    ['a header line without a colon', 'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n'],
    ['a header with an empty name', 'HTTP/1.1 200 OK\r\n: value\r\n\r\n'],
    ['whitespace before a colon', 'HTTP/1.1 200 OK\r\ncontent-length : 1\r\n\r\nx'],
    ['an obsolete folded header line', 'HTTP/1.1 200 OK\r\nx-a: 1\r\n  folded\r\n\r\n'],
    ['a bare LF in the head', 'HTTP/1.1 200 OK\r\nx-a: 1\nx-b: 2\r\n\r\n'],
    ['a non-numeric Content-Length', 'HTTP/1.1 200 OK\r\ncontent-length: 12a\r\n\r\n'],
    ['a negative Content-Length', 'HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n'],
    ['conflicting Content-Lengths', 'HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nxx'],
    ['101 without an upgrade request', 'HTTP/1.1 101 Switching Protocols\r\n\r\n'],
    ['a chunk size that is not hex', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n'],
    ['a chunk size line without digits', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n;ext\r\n'],
    ['a chunk size ended by a bare LF', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\nhello'],
    [
      'chunk data not followed by CRLF',
      'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhello\r\n',
    ],
    ['a chunk size past 1 TiB', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nffffffffffff\r\n'],
  ])('throws HTTP1_PROTOCOL for %s, whole or split byte by byte', (_name, input) => {
    expect(parseError(input).code).toBe('HTTP1_PROTOCOL');
    const everyByte = Array.from({ length: input.length }, (_, i) => i);
    expect(parseError(input, everyByte).code).toBe('HTTP1_PROTOCOL');
  });

  it('throws HTTP1_HEADERS_TOO_LARGE for a head past the limit, in one read or many', () => {
    const big = Buffer.from(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`);
    expect(parseError(big).code).toBe('HTTP1_HEADERS_TOO_LARGE');
    const cuts = Array.from({ length: Math.ceil(big.length / 1000) }, (_, i) => i * 1000);
    expect(parseError(big, cuts).code).toBe('HTTP1_HEADERS_TOO_LARGE');
    // An unterminated head is refused as soon as it passes the limit, not when the socket closes.
    const endless = Buffer.from(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(MAX_HEAD_BYTES + 10)}`);
    expect(parseError(endless, cuts).code).toBe('HTTP1_HEADERS_TOO_LARGE');
  });

  it('throws HTTP1_HEADERS_TOO_LARGE for trailers past the limit', () => {
    const input = `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\nx-t: ${'b'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`;
    expect(parseError(input).code).toBe('HTTP1_HEADERS_TOO_LARGE');
  });

  it('accepts a head just under the limit', () => {
    const filler = 'a'.repeat(MAX_HEAD_BYTES - 200);
    const sut = parse(
      Buffer.from(`HTTP/1.1 200 OK\r\nx-big: ${filler}\r\ncontent-length: 2\r\n\r\nok`),
      [100, 30000],
    );
    expect(sut.complete).toBe(true);
    expect(sut.body.toString()).toBe('ok');
  });

  it('parses the next response on the same connection after reset()', () => {
    const sink = new Collector();
    const sut = new Http1ResponseParser(sink);
    const first = Buffer.from('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\na');
    sut.execute(first, 0, first.length, 0);
    expect(sut.complete).toBe(true);
    sut.reset();
    const second = Buffer.from('HTTP/1.1 503 Busy\r\ntransfer-encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n');
    sut.execute(second, 0, second.length, 0);
    expect(sut.complete).toBe(true);
    expect(sut.keepAlive).toBe(true);
    expect(sink.heads.map((h) => h.status)).toEqual([200, 503]);
    expect(Buffer.concat(sink.parts).toString()).toBe('ab');
  });
});

describe('Http1ResponseParser on a kept-alive connection', () => {
  /** Heads that differ in framing, connection, ids and Retry-After; drawn again and again. */
  const heads = [
    'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n',
    'HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-request-id: a\r\n\r\n',
    'HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-sim-request-id: b\r\n\r\n',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n',
    'HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\nContent-Length: 5\r\n\r\n',
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n',
    'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\n',
    'HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n',
  ];
  const bodyOf = (head: string) =>
    head.includes('chunked') ? '5\r\nhello\r\n0\r\n\r\n' : head.includes('204') ? '' : 'hello';

  it('reads every response as a fresh parser does, however often a head repeats', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: heads.length - 1 }), { minLength: 1, maxLength: 12 }), (picks) => {
        const kept = new Collector();
        const sut = new Http1ResponseParser(kept);
        for (const pick of picks) {
          const input = Buffer.from(heads[pick] + bodyOf(heads[pick]), 'latin1');
          const before = kept.heads.length;
          const end = sut.execute(input, 0, input.length, 0);
          const fresh = parse(input);
          expect(sut.complete).toBe(true);
          expect(end).toBe(fresh.endAt);
          expect(sut.keepAlive).toBe(fresh.keepAlive);
          expect(sut.status).toBe(fresh.heads[0].status);
          expect(kept.heads.slice(before)).toEqual(fresh.heads);
          sut.reset();
        }
        expect(Buffer.concat(kept.parts).toString('latin1')).toBe(
          picks.map((pick) => bodyOf(heads[pick]).replace('5\r\nhello\r\n0\r\n\r\n', 'hello')).join(''),
        );
      }),
    );
  });

  it('passes the Retry-After of the head it repeats', () => {
    const kept = new Collector();
    const sut = new Http1ResponseParser(kept);
    const input = Buffer.from('HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n', 'latin1');
    for (let i = 0; i < 2; i++) {
      sut.execute(input, 0, input.length, 0);
      sut.reset();
    }
    expect(kept.retryAfters).toEqual(['2', '2']);
  });
});
