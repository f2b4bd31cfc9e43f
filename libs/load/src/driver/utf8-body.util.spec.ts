import fc from 'fast-check';
import { Utf8BodyText } from './utf8-body.util';

/** Bytes with multi-byte characters, lone continuation bytes, truncated sequences and ASCII. */
const bodyBytes = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 8 }).map((s) => [...Buffer.from(s, 'utf8')]),
      fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 6 }),
      fc.constantFrom([0x7d], [0xe2, 0x82], [0x80], [0xf0, 0x9f, 0x98]),
    ),
    { maxLength: 40 },
  )
  .map((parts) => Buffer.from(parts.flat()));

/** Cut points of `length` bytes into pieces, empty pieces included. */
const cuts = (length: number) =>
  fc.array(fc.integer({ min: 0, max: length }), { maxLength: 8 }).map((xs) => [0, ...xs.sort((a, b) => a - b), length]);

describe(Utf8BodyText.name, () => {
  it('gives the text of the whole body however it is cut, borrowed or owned pieces', () => {
    fc.assert(
      fc.property(
        bodyBytes.chain((body) => fc.tuple(fc.constant(body), cuts(body.length), fc.boolean())),
        ([body, points, owned]) => {
          const text = new Utf8BodyText();
          for (let i = 1; i < points.length; i++) {
            // A borrowed piece sits inside a bigger buffer that is overwritten after the call.
            const scratch = Buffer.alloc(body.length + 4, 0xff);
            body.copy(scratch, 2, points[i - 1], points[i]);
            if (owned) text.addOwned(Buffer.from(body.subarray(points[i - 1], points[i])));
            else text.add(scratch, 2, 2 + points[i] - points[i - 1]);
            scratch.fill(0x41);
          }
          expect(text.text()).toBe(body.toString('utf8'));
          expect(text.bytes).toBe(body.length);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('is empty before any byte', () => {
    expect(new Utf8BodyText().text()).toBe('');
  });
});
