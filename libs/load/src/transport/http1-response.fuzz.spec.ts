import fc from 'fast-check';
import { fuzzParser, textFrom } from '@fathom/testing';
import { Http1Error } from './http1.error';
import { Http1ResponseParser, type Http1ResponseSink } from './http1-response.parser';

/** What a target answers: parsed, or an Http1Error, never another throw, whatever the framing. */
describe('HTTP/1.1 response parsing against hostile input', () => {
  const fragments = [
    'HTTP/1.1 200 OK\r\n',
    'HTTP/1.1 100 Continue\r\n\r\n',
    'HTTP/1.0 204 No Content\r\n',
    'HTTP/1.1 999 x\r\n',
    'HTTP/2 200\r\n',
    'Content-Length: 5\r\n',
    'content-length: 99999999999999999999\r\n',
    'Content-Length: -1\r\n',
    'Content-Length: 3, 4\r\n',
    'Transfer-Encoding: chunked\r\n',
    'transfer-encoding: gzip, chunked\r\n',
    'Connection: close\r\n',
    'x-request-id: abc\r\n',
    '\r\n',
    '\n',
    '\r',
    ': ',
    ' ',
    '\t',
    '5\r\nhello\r\n',
    '0\r\n\r\n',
    'ffffffffffffffff\r\n',
    '3;ext=1\r\nabc\r\n',
    'zz\r\n',
    'trailer: x\r\n',
    'hello',
    '\u0000',
    '\u00ff',
    'é',
  ];
  const sink: Http1ResponseSink = { onResponseHead: () => undefined, onResponseBody: () => undefined };

  it('Http1ResponseParser: 10,000 seeded responses cut anywhere, with and without EOF', () => {
    const report = fuzzParser(
      fc.tuple(textFrom(fragments, [], 24), fc.array(fc.nat(), { maxLength: 6 }), fc.boolean()),
      ([text, cuts, eof]) => {
        const input = Buffer.from(text, 'latin1');
        const sut = new Http1ResponseParser(sink);
        const bounds = [0, ...cuts.map((c) => c % (input.length + 1)).sort((a, b) => a - b), input.length];
        for (let i = 0; i + 1 < bounds.length && !sut.complete; i++) {
          if (bounds[i + 1] > bounds[i]) sut.execute(input, bounds[i], bounds[i + 1], 0);
        }
        if (!sut.complete && eof) sut.finish();
        return sut.complete;
      },
      { seed: 1406, refusal: (error) => error instanceof Http1Error },
    );
    expect(report.cases).toBe(10_000);
    expect(report.refused).toBeGreaterThan(0);
  });
});
