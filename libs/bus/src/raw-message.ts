/** A message as a transport received it, before decoding. */
export interface RawMessage {
  readonly topic: string;
  readonly key: string | null;
  readonly partition: number | null;
  readonly offset: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly value: Buffer | null;
}
