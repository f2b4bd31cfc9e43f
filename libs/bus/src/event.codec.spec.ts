import fc from 'fast-check';
import { Topics } from '@fathom/contracts';
import { lifecycleEvent } from './bus.contract-suite';
import { InvalidEventError, decodeEvent, encodeEvent } from './event.codec';

describe('event codec', () => {
  it('decodes what it encodes', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        fc.nat(),
        (campaignId, runId, sent) => {
          const event = lifecycleEvent(campaignId, runId, sent);
          const decoded = decodeEvent(Topics.runLifecycle.schema, encodeEvent(Topics.runLifecycle, event));
          expect(decoded).toEqual({ ok: true, event });
        },
      ),
    );
  });

  it('never throws on arbitrary bytes, and calls them invalid JSON or a schema mismatch', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const decoded = decodeEvent(Topics.runLifecycle.schema, Buffer.from(bytes));
        expect(decoded.ok).toBe(false);
        if (!decoded.ok) expect(['invalid-json', 'schema-mismatch']).toContain(decoded.reason);
      }),
    );
  });

  it('calls well-formed JSON of the wrong shape a schema mismatch and names the field', () => {
    const decoded = decodeEvent(
      Topics.runLifecycle.schema,
      Buffer.from(JSON.stringify({ ...lifecycleEvent('c', 'r', 0), shard: 'one' })),
    );
    expect(decoded).toMatchObject({ ok: false, reason: 'schema-mismatch' });
    expect(!decoded.ok && decoded.error).toContain('shard');
  });

  it('calls a tombstone (no value) invalid JSON', () => {
    expect(decodeEvent(Topics.runLifecycle.schema, null)).toMatchObject({
      ok: false,
      reason: 'invalid-json',
    });
  });

  it('refuses to encode an event its topic schema rejects, naming the topic', () => {
    const bad = { ...lifecycleEvent('c', 'r', 0), counts: { sent: -1 } } as never;
    expect(() => encodeEvent(Topics.runLifecycle, bad)).toThrow(InvalidEventError);
    expect(() => encodeEvent(Topics.runLifecycle, bad)).toThrow(/fathom\.run\.lifecycle\.v1/);
  });
});
