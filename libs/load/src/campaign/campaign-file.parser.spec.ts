import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CampaignFileError, parseCampaignFile, preflightCampaign } from './campaign-file.parser';

const base = (load: string, scenario = '  type: chat\n  prompts: [hello]') => `name: demo
target:
  baseUrl: http://127.0.0.1:8000/v1
scenario:
${scenario}
load:
${load}
`;

function refusal(text: string): CampaignFileError {
  try {
    parseCampaignFile(text, 'c.yaml');
  } catch (error) {
    if (error instanceof CampaignFileError) return error;
    throw error;
  }
  throw new Error('was accepted');
}

describe(parseCampaignFile.name, () => {
  it('keeps the original shape: concurrency + durationMs alone mean a closed profile', () => {
    const sut = parseCampaignFile(base('  concurrency: 8\n  durationMs: 1000'));
    expect(sut.load).toMatchObject({
      concurrency: 8,
      durationMs: 1000,
      requestTimeoutMs: 30000,
      recordSampleRate: 1,
      shards: 1,
    });
    expect(sut.load.profile).toBeUndefined();
  });

  it('parses every profile type with its seed', () => {
    const profiles = [
      '{type: closed, thinkTimeMs: 10}',
      '{type: constant-rate, ratePerSec: 5}',
      '{type: poisson, ratePerSec: 5, seed: 9}',
      '{type: ramping-rate, startRatePerSec: 0, stages: [{durationMs: 1000, targetRatePerSec: 10}]}',
      '{type: sweep, rates: 3}',
      '{type: replay, path: t.jsonl}',
      '{type: adaptive, p95BudgetMs: 500, gpuMemoryCeiling: 0.9}',
    ];
    for (const profile of profiles) {
      const sut = parseCampaignFile(base(`  concurrency: 8\n  durationMs: 1000\n  profile: ${profile}`));
      expect(sut.load.profile?.seed).toEqual(expect.any(Number));
    }
  });

  it('refuses an unknown profile type naming the field and the line', () => {
    const sut = refusal(base('  concurrency: 8\n  durationMs: 1000\n  profile:\n    type: bursty'));
    expect(sut.issues[0]).toMatchObject({ path: 'load.profile.type', line: 11 });
    expect(sut.message).toContain('c.yaml:11: load.profile.type');
  });

  it('refuses a negative rate naming the field and the line', () => {
    const sut = refusal(
      base('  concurrency: 8\n  durationMs: 1000\n  profile:\n    type: constant-rate\n    ratePerSec: -3'),
    );
    expect(sut.issues).toEqual([expect.objectContaining({ path: 'load.profile.ratePerSec', line: 12 })]);
  });

  it('refuses unknown fields (strict) and broken YAML with a line', () => {
    expect(refusal(base('  concurrency: 8\n  durationMs: 1000\n  rps: 5')).issues[0]).toMatchObject({
      path: 'load',
      line: 7,
    });
    expect(refusal('name: demo\nkey: value: other\nx: 1\n').issues[0].line).toBe(2);
  });

  it('refuses a scenario without prompts or dataset', () => {
    expect(refusal(base('  concurrency: 1\n  durationMs: 1', '  type: chat')).issues[0]).toMatchObject({
      path: 'scenario.prompts',
    });
  });
});

describe(preflightCampaign.name, () => {
  it('refuses a dataset file that does not parse, naming the field, file and line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fathom-ds-'));
    const file = join(dir, 'prompts.jsonl');
    writeFileSync(file, '{"prompt": "a"}\n{"prompt": "b"}\n{"prompt": oops}\n');
    const spec = parseCampaignFile(
      base('  concurrency: 1\n  durationMs: 1', `  type: chat\n  dataset: {type: jsonl, path: ${file}}`),
    );
    await expect(preflightCampaign(spec)).rejects.toThrow(`scenario.dataset: ${file}:3: not JSON`);
  });

  it('refuses a replay trace with a bad timestamp, naming its line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fathom-rp-'));
    const file = join(dir, 'trace.jsonl');
    writeFileSync(file, '{"timestampMs": 1}\n\n{"timestampMs": "soon"}\n');
    const spec = parseCampaignFile(
      base(`  concurrency: 1\n  durationMs: 1\n  profile: {type: replay, path: ${file}}`),
    );
    await expect(preflightCampaign(spec)).rejects.toThrow(
      `load.profile.path: ${file}:3: needs a numeric timestampMs`,
    );
  });
});
