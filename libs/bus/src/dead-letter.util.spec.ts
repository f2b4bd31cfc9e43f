import { DeadLetterSchema } from '@fathom/contracts';
import { buildDeadLetter } from './dead-letter.util';

describe(buildDeadLetter.name, () => {
  const message = {
    topic: 'fathom.run.lifecycle.v1',
    key: 'run-9',
    partition: 2,
    offset: '41',
    headers: {},
    value: Buffer.from('{"campaignId":"c-1","runId":"run-9","phase":"?"}'),
  };

  it('keeps the original bytes, where they came from and the run ids it could read', () => {
    const letter = buildDeadLetter(
      {
        message,
        group: 'analyzer',
        reason: 'schema-mismatch',
        error: 'phase: invalid',
        attempts: 0,
        parsed: JSON.parse(message.value.toString()),
      },
      1_700_000_000_000,
    );
    expect(DeadLetterSchema.parse(letter)).toEqual(letter);
    expect(letter).toMatchObject({
      originalTopic: 'fathom.run.lifecycle.v1',
      consumerGroup: 'analyzer',
      partition: 2,
      offset: '41',
      key: 'run-9',
      campaignId: 'c-1',
      runId: 'run-9',
      emittedAt: 1_700_000_000_000,
    });
    expect(Buffer.from(letter.payloadBase64, 'base64')).toEqual(message.value);
  });

  it('leaves the run ids null when nothing could be parsed', () => {
    const letter = buildDeadLetter({
      message: { ...message, value: null },
      group: 'g',
      reason: 'invalid-json',
      error: 'no value',
      attempts: 0,
    });
    expect(letter).toMatchObject({ campaignId: null, runId: null, payloadBase64: '' });
  });
});
