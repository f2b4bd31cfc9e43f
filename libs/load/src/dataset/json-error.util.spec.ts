import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDataset } from './prompt.source';
import { loadReplay } from '../profile/replay.loader';

describe('errors about a data file never quote it', () => {
  const SHADOW = 'root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\nbin:*:19000:0:99999:7:::\n';
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fathom-json-error-'));
    await writeFile(join(dir, 'shadow'), SHADOW);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each([
    ['a jsonl dataset', () => loadDataset({ type: 'jsonl', path: join(dir, 'shadow'), field: 'prompt' })],
    ['a sharegpt dataset', () => loadDataset({ type: 'sharegpt', path: join(dir, 'shadow'), maxTurns: 1 })],
    ['a replay trace', () => loadReplay(join(dir, 'shadow'), 'jsonl')],
    ['an OTLP trace', () => loadReplay(join(dir, 'shadow'), 'otel')],
  ])('%s that is not JSON: the line, not its text', async (_what, load) => {
    const error = (await load().then(
      () => null,
      (e: unknown) => e,
    )) as Error;
    expect(error.message).toMatch(/:1: not/);
    for (const piece of ['root', '$6$', 'salt', 'hash', 'bin:'])
      expect(error.message.replace(join(dir, 'shadow'), '')).not.toContain(piece);
  });
});
