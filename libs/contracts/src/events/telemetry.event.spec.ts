import { RETRIEVED_DOCUMENT_LIMITS, RequestRecordSchema, type RequestRecord } from './telemetry.event';

const record: RequestRecord = {
  requestId: 'r-1',
  shard: 0,
  scheduledAt: 1_700_000_000_000,
  startedAt: 1_700_000_000_000,
  ttftMs: null,
  e2eMs: 12,
  correctedE2eMs: 12,
  chunkOffsetsMs: [],
  status: 200,
  errorClass: null,
  inputTokensClient: 3,
  outputTokensClient: 0,
  usage: null,
  content: '{"results":[]}',
  prompt: 'refund policy',
  finishReason: null,
};

describe('RequestRecordSchema retrievedDocuments', () => {
  it('is optional: records from older generators still parse', () => {
    expect(RequestRecordSchema.safeParse(record).success).toBe(true);
  });

  it('accepts up to 3 documents of up to 512 characters', () => {
    const documents = Array.from({ length: RETRIEVED_DOCUMENT_LIMITS.maxDocuments }, () => 'd'.repeat(512));
    expect(RequestRecordSchema.safeParse({ ...record, retrievedDocuments: documents }).success).toBe(true);
  });

  it('refuses a 4th document and a 513-character one', () => {
    expect(
      RequestRecordSchema.safeParse({ ...record, retrievedDocuments: ['a', 'b', 'c', 'd'] }).success,
    ).toBe(false);
    expect(RequestRecordSchema.safeParse({ ...record, retrievedDocuments: ['d'.repeat(513)] }).success).toBe(
      false,
    );
  });
});
