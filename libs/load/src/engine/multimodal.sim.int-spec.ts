import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CampaignSpecSchema, type RequestRecord } from '@fathom/contracts';
import { startSimTarget } from '@fathom/sim';
import { startLocalOpenAi } from '../__fixtures__/local-openai.server';
import { runShard } from './run-shard';

const IMAGE =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const AUDIO = { data: 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=', format: 'wav' };

function datasetFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fathom-mm-'));
  const path = join(dir, 'mm.jsonl');
  writeFileSync(
    path,
    [
      JSON.stringify({ q: 'What is in this picture?', img: [IMAGE, 'https://example.com/cat.jpg'] }),
      JSON.stringify({ q: 'Transcribe this.', clip: AUDIO }),
    ].join('\n'),
  );
  return path;
}

async function run(baseUrl: string, path: string) {
  const records: RequestRecord[] = [];
  const result = await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'multimodal',
      target: { baseUrl },
      scenario: {
        type: 'chat',
        model: 'fathom-sim-8b',
        maxTokens: 8,
        dataset: { type: 'jsonl', path, columns: { prompt: 'q', image: 'img', audio: 'clip' } },
      },
      load: { concurrency: 1, durationMs: 300 },
    }),
    shard: { index: 0, count: 1 },
    runId: 'mm',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => records.push(r), window: () => undefined },
    signal: new AbortController().signal,
  });
  return { result, records };
}

describe('multimodal content parts', () => {
  it('passes image_url and input_audio parts through after the text, as given', async () => {
    const target = await startLocalOpenAi(() => ({ kind: 'stream', tokens: 2, gapMs: 1 }));
    try {
      await run(target.url, datasetFile());
      const [image, audio] = target.received.slice(0, 2).map((r) => JSON.parse(r.body).messages);
      expect(image).toEqual([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: IMAGE } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ]);
      expect(audio[0].content[1]).toEqual({ type: 'input_audio', input_audio: AUDIO });
    } finally {
      await target.close();
    }
  });

  it('is accepted by the simulated target, text counted client-side without the media', async () => {
    const sim = await startSimTarget({ port: 0, host: '127.0.0.1', config: { seed: 1, timeScale: 0.05 } });
    try {
      const { result, records } = await run(`${sim.url}/v1`, datasetFile());
      expect(result.errors).toBe(0);
      expect(result.completed).toBeGreaterThan(1);
      // "What is in this picture?" is 6 tokens in o200k_base.
      expect(records[0].inputTokensClient).toBe(6);
    } finally {
      await sim.close();
    }
  });
});
