import { randomUUID } from 'node:crypto';
import type { DeadLetter } from '@fathom/contracts';
import type { RawMessage } from './raw-message';

export interface DeadLetterInput {
  readonly message: RawMessage;
  readonly group: string;
  readonly reason: DeadLetter['reason'];
  readonly error: string;
  /** Handler attempts made; 0 when the message never reached the handler. */
  readonly attempts: number;
  /** The decoded (or at least parsed) payload, to lift campaign and run ids from. */
  readonly parsed?: unknown;
}

function stringField(value: unknown, field: string): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const candidate = (value as Record<string, unknown>)[field];
  return typeof candidate === 'string' ? candidate : null;
}

/** The dead letter for a message a consumer could not take; keeps the original bytes. */
export function buildDeadLetter(input: DeadLetterInput, now = Date.now()): DeadLetter {
  const { message } = input;
  return {
    id: randomUUID(),
    schemaVersion: 1,
    emittedAt: now,
    campaignId: stringField(input.parsed, 'campaignId'),
    runId: stringField(input.parsed, 'runId'),
    originalTopic: message.topic,
    consumerGroup: input.group,
    partition: message.partition,
    offset: message.offset,
    key: message.key,
    reason: input.reason,
    error: input.error,
    payloadBase64: (message.value ?? Buffer.alloc(0)).toString('base64'),
    attempts: input.attempts,
  };
}
