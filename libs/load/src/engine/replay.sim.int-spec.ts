import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CampaignSpecSchema, type CampaignSpecInput, type RequestRecord } from '@fathom/contracts';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { runShard } from './run-shard';

const fixtures = join(__dirname, '../__fixtures__/traces');

async function replay(
  sim: SimTarget,
  scenario: CampaignSpecInput['scenario'],
  profile: CampaignSpecInput['load']['profile'],
) {
  const records: RequestRecord[] = [];
  const result = await runShard({
    spec: CampaignSpecSchema.parse({
      name: 'replay',
      target: { baseUrl: `${sim.url}/v1` },
      scenario,
      load: { concurrency: 8, durationMs: 4000, requestTimeoutMs: 20000, profile },
    }),
    shard: { index: 0, count: 1 },
    runId: 'replay',
    campaignId: 'c',
    generatorId: 'g',
    sink: { record: (r) => records.push(r), window: () => undefined },
    signal: new AbortController().signal,
  });
  return { result, records };
}

describe('trace replay against the simulated target', () => {
  let sim: SimTarget;
  beforeAll(async () => {
    sim = await startSimTarget({
      port: 0,
      host: '127.0.0.1',
      config: { seed: 8, timeScale: 0.05, output: { hallucinationRate: 0 } },
    });
  });
  afterAll(() => sim.close());

  it('replays a Mooncake trace on its own clock: exact input lengths, its output lengths, shared blocks hit the prefix cache', async () => {
    const { result, records } = await replay(
      sim,
      {
        type: 'chat',
        model: 'fathom-sim-8b',
        prompts: ['unused'],
        stream: false,
        maxTokens: 8,
        tokenizer: 'cl100k_base',
      },
      { type: 'replay', path: join(fixtures, 'mooncake.jsonl'), format: 'mooncake', speed: 4 },
    );
    expect(result.sent).toBe(3);
    expect(result.errors).toBe(0);
    const byStart = [...records].sort((a, b) => a.scheduledAt - b.scheduledAt);
    expect(byStart.map((r) => r.inputTokensClient)).toEqual([6755, 7319, 7234]);
    // Recorded at 0 and 3052 ms, replayed 4x faster: the third starts ~763 ms after the first.
    expect(byStart[2].scheduledAt - byStart[0].scheduledAt).toBeCloseTo(763, -1);
    byStart.forEach((r, i) => expect(r.usage!.completionTokens).toBeLessThanOrEqual([500, 490, 794][i]));
    // The third request shares hash id 0 (512 tokens) with the first two: the sim's prefix cache hits.
    expect(byStart[2].usage!.cachedTokens).toBeGreaterThan(0);
  }, 30000);

  it('replays OpenTelemetry file-exporter traces by intent-path weights: each request runs the steps of its drawn path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fathom-replay-'));
    // 40 arrivals 50 ms apart; the paths come from the three fixture traces (2/3 and 1/3).
    const lines = readFileSync(join(fixtures, 'otel-file-exporter.jsonl'), 'utf8').trim().split('\n');
    const many = Array.from({ length: 40 }, (_, i) =>
      lines[i % 3].replace(
        /"startTimeUnixNano":"(\d+)"/g,
        (_m: string, t: string) => `"startTimeUnixNano":"${BigInt(t) + BigInt(i) * 50_000_000n}"`,
      ),
    );
    writeFileSync(join(dir, 'traces.jsonl'), many.join('\n'));
    const { records } = await replay(
      sim,
      {
        type: 'http',
        steps: [
          // Paths under the base URL (/v1).
          { name: 'qa', method: 'GET', path: '/models' },
          { name: 'chart', method: 'GET', path: '/models/fathom-sim-8b' },
          { name: 'export', method: 'GET', path: '/models' },
          { name: 'summary', method: 'GET', path: '/models/fathom-sim-8b' },
        ],
      },
      { type: 'replay', path: join(dir, 'traces.jsonl'), format: 'otel', mode: 'intent-paths', seed: 2 },
    );
    expect(records.every((r) => r.errorClass === null)).toBe(true);
    const threeSteps = records.filter((r) => r.content === '3/3 steps ran').length;
    const twoSteps = records.filter((r) => r.content === '2/2 steps ran').length;
    expect(threeSteps + twoSteps).toBe(records.length);
    expect(records.length).toBeGreaterThan(30);
    expect(threeSteps).toBeGreaterThan(twoSteps);
    expect(twoSteps).toBeGreaterThan(0);
  }, 30000);
});
