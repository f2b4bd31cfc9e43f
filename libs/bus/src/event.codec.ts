import { z } from 'zod';
import type { TopicDef } from '@fathom/contracts';

/** Why a message could not be decoded; the values are the dead-letter `reason`s. */
export type DecodeFailureReason = 'invalid-json' | 'schema-mismatch';

export type DecodeResult<T> =
  | { readonly ok: true; readonly event: T }
  | {
      readonly ok: false;
      readonly reason: DecodeFailureReason;
      readonly error: string;
      readonly parsed?: unknown;
    };

/** Thrown by `encodeEvent` when a publisher hands over an event its topic's schema rejects. */
export class InvalidEventError extends Error {
  constructor(
    readonly topic: string,
    readonly issues: string,
  ) {
    super(`event for ${topic} does not match its schema: ${issues}`);
    this.name = 'InvalidEventError';
  }
}

/** Validates an outgoing event against its topic's schema and serialises it as UTF-8 JSON. */
export function encodeEvent<S extends z.ZodType>(topic: TopicDef<S>, event: z.infer<S>): Buffer {
  const checked = topic.schema.safeParse(event);
  if (!checked.success) throw new InvalidEventError(topic.name, z.prettifyError(checked.error));
  return Buffer.from(JSON.stringify(checked.data), 'utf8');
}

/** Parses and validates bytes that arrived on a topic. Never throws. */
export function decodeEvent<S extends z.ZodType>(schema: S, value: Buffer | null): DecodeResult<z.infer<S>> {
  if (value === null) return { ok: false, reason: 'invalid-json', error: 'message has no value (tombstone)' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch (error) {
    return {
      ok: false,
      reason: 'invalid-json',
      error: error instanceof Error ? error.message : String(error),
    };
  }
  const checked = schema.safeParse(parsed);
  if (!checked.success) {
    return { ok: false, reason: 'schema-mismatch', error: z.prettifyError(checked.error), parsed };
  }
  return { ok: true, event: checked.data };
}
