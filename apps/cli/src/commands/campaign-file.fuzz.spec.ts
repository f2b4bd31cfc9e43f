import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fuzzParser, textFrom } from '@fathom/testing';
import { CampaignValidationError, parseCampaign } from '@fathom/contracts';
import { CliExit } from '../cli-exit';
import { parseCampaignText } from './campaign-file';

/** A campaign file: a spec, or exit code 2 naming the problem; never a ReferenceError or a hang. */
describe('campaign YAML parsing against hostile input', () => {
  const example = readFileSync(
    join(__dirname, '..', '..', '..', '..', 'examples', 'chat-smoke.yaml'),
    'utf8',
  );
  const fragments = [
    'name: ',
    'target:\n',
    '  baseUrl: ',
    'http://127.0.0.1:8000/v1',
    'scenario:\n',
    '  type: chat\n',
    '  prompts: [a]\n',
    'load:\n',
    '  concurrency: ',
    '  durationMs: ',
    '1e309',
    '-1',
    '&a ',
    '*a',
    '*nope',
    '<<: *a\n',
    '!!js/function ',
    '!!binary ',
    '!!python/object ',
    '%YAML 1.2\n',
    '---\n',
    '...\n',
    '? ',
    ': ',
    '- ',
    '[',
    ']',
    '{',
    '}',
    '"',
    "'",
    '|\n',
    '>\n',
    '#',
    '\t',
    '\n',
    '  ',
    '\ufeff',
    '\u0000',
    'é',
  ];

  it('parseCampaignText then parseCampaign: 10,000 seeded cases', () => {
    const report = fuzzParser(
      textFrom(fragments, [example], 30),
      (text) => parseCampaign(parseCampaignText(text, 'c.yaml')),
      {
        seed: 1404,
        refusal: (error) =>
          (error instanceof CliExit && error.code === 2) || error instanceof CampaignValidationError,
      },
    );
    expect(report.cases).toBe(10_000);
    expect(report.heapGrowthMib).toBeLessThan(256);
  });
});
