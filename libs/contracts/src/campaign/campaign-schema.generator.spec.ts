import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CAMPAIGN_REFERENCE_PATH,
  CAMPAIGN_SCHEMA_PATH,
  campaignFieldReference,
  campaignJsonSchema,
  campaignSchemaFiles,
  documentedLiterals,
} from './campaign-schema.generator';
import { CampaignSpecSchema } from './campaign.schema';

const ROOT = join(__dirname, '..', '..', '..', '..');

describe('campaign JSON Schema and field reference', () => {
  it.each(Object.entries(campaignSchemaFiles(ROOT)))('%s is up to date (npm run schema)', (path, text) => {
    expect(readFileSync(join(ROOT, path), 'utf8')).toBe(text);
  });

  it('is a draft 2020-12 schema an editor can use, with the comments of the zod schemas', () => {
    const sut = campaignJsonSchema(ROOT) as {
      $schema: string;
      properties: Record<
        string,
        { description?: string; properties?: Record<string, { description?: string }> }
      >;
      required: string[];
      additionalProperties: boolean;
    };
    expect(sut.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(sut.required).toEqual(expect.arrayContaining(['name', 'target', 'scenario', 'load']));
    expect(sut.additionalProperties).toBe(false);
    expect(Object.keys(sut.properties)).toContain('$schema');
    expect(sut.properties.target.properties!.baseUrl.description).toMatch(
      /^Base URL of an OpenAI-compatible server/,
    );
    expect(sut.properties.load.properties!.requestTimeoutMs.description).toMatch(/classified `timeout`/);
  });

  it('accepts a campaign file that names its JSON Schema', () => {
    const parsed = CampaignSpecSchema.safeParse({
      $schema: `../${CAMPAIGN_SCHEMA_PATH}`,
      name: 'x',
      target: { baseUrl: 'http://127.0.0.1:8000/v1' },
      scenario: { type: 'chat', prompts: ['hi'] },
      load: { concurrency: 1, durationMs: 1000 },
    });
    expect(parsed.success).toBe(true);
  });

  it('reads the comment of each property of an object literal', () => {
    const [sut] = documentedLiterals([
      'const a = z.object({\n  /** Requests per\n   * second. */\n  rate: z.number(),\n  seed: z.number(),\n});',
    ]);
    expect([...sut.keys]).toEqual(['rate', 'seed']);
    expect(sut.docs).toEqual(new Map([['rate', 'Requests per second.']]));
  });

  it('lists variants of a union by their discriminator in the reference', () => {
    const reference = campaignFieldReference(campaignJsonSchema(ROOT));
    expect(reference).toContain('| `load.profile{type=poisson}.ratePerSec` | number | yes |  | > 0 |');
    expect(reference).toContain(
      '| `scenario{type=chat}.maxTokens` | integer |  | `64` | integer, > 0, <= 32768 |',
    );
    expect(reference.startsWith('# Campaign file reference')).toBe(true);
    expect(CAMPAIGN_REFERENCE_PATH).toBe('docs/campaign-reference.md');
  });
});
