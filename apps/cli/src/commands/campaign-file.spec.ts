import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliExit } from '../cli-exit';
import { readCampaignFile } from './campaign-file';

describe(readCampaignFile.name, () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fathom-campaign-file-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each([
    ['an alias to no anchor', 'name: *nope\n'],
    [
      'an alias expanding a billion times',
      `a: &a [x, x, x, x, x, x, x, x, x, x]\n${Array.from(
        { length: 9 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
            .fill(`*${String.fromCharCode(97 + i)}`)
            .join(', ')}]`,
      ).join('\n')}\n`,
    ],
  ])('refuses %s with the invalid-file exit code 2', async (_what, text) => {
    const file = join(dir, 'c.yaml');
    await writeFile(file, text);
    const sut = await readCampaignFile(file).then(
      () => null,
      (error: unknown) => error,
    );
    expect(sut).toBeInstanceOf(CliExit);
    expect((sut as CliExit).code).toBe(2);
    expect((sut as CliExit).message).toContain(file);
  });
});
