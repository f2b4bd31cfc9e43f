import type { RequestRecord } from '@fathom/contracts';

/**
 * A record's serialised size in bytes, estimated from what dominates it (no serialisation: it
 * runs on the engine's thread for every record). Both hand-overs of a record cost about linearly
 * in it: the structured clone to the main thread (engine.worker) and the schema check + JSON of
 * the bus message (TelemetryPublisher), so both cut their batches by it.
 */
export function estimatedRecordBytes(record: RequestRecord): number {
  let bytes = 600 + record.content.length + (record.prompt?.length ?? 0) + 12 * record.chunkOffsetsMs.length;
  const logprobs = record.logprobs;
  if (logprobs !== undefined)
    for (let i = 0; i < logprobs.length; i++) bytes += 48 + 40 * logprobs[i].top.length;
  if (record.toolCalls !== undefined) bytes += 400 * record.toolCalls.length;
  const documents = record.retrievedDocuments;
  if (documents !== undefined) for (let i = 0; i < documents.length; i++) bytes += 4 + documents[i].length;
  return bytes;
}
