import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CampaignSpecSchema, RequestRecordSchema, type RequestRecord } from '@fathom/contracts';
import { runShard } from './run-shard';

/** An embeddings endpoint that notes the trace context of each request and answers with its own id. */
async function embeddingsServer() {
  const received = new Map<string, { traceparent: string; serverId: string }>();
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const serverId = `srv-${++n}`;
      received.set(String(req.headers['x-fathom-request']), {
        traceparent: String(req.headers.traceparent),
        serverId,
      });
      res
        .writeHead(200, { 'content-type': 'application/json', 'x-request-id': serverId })
        .end('{"data":[{"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":2,"total_tokens":2}}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('runShard: trace context and the server request id on records', () => {
  it("keeps the traceparent it sent and the target's x-request-id on each record", async () => {
    const target = await embeddingsServer();
    const records: RequestRecord[] = [];
    try {
      await runShard({
        spec: CampaignSpecSchema.parse({
          name: 'trace',
          target: { baseUrl: target.url },
          scenario: { type: 'embeddings', model: 'm', dataset: { type: 'inline', prompts: ['a', 'b'] } },
          load: { concurrency: 2, durationMs: 300 },
        }),
        shard: { index: 3, count: 4 },
        runId: 'r',
        campaignId: 'c',
        generatorId: 'g',
        sink: { record: (r) => void records.push(r), window: () => undefined },
        signal: new AbortController().signal,
      });
    } finally {
      await target.close();
    }
    expect(records.length).toBeGreaterThan(1);
    for (const record of records) {
      expect(RequestRecordSchema.parse(record)).toEqual(record);
      const seen = target.received.get(record.requestId)!;
      expect(seen.traceparent).toBe(`00-${record.traceId}-${record.spanId}-01`);
      expect(record.serverRequestId).toBe(seen.serverId);
    }
    expect(new Set(records.map((r) => r.traceId)).size).toBe(records.length);
    expect(records[0].spanId!.startsWith('0003')).toBe(true); // the shard's prefix keeps span ids unique per run
  });
});
