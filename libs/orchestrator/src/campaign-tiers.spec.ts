import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CampaignValidationError, parseCampaign } from '@fathom/contracts';

const base = {
  name: 'tiers',
  target: { baseUrl: 'http://127.0.0.1:8000/v1' },
  scenario: { type: 'chat', prompts: ['hello'] },
  load: { concurrency: 1, durationMs: 1000 },
};
const gold = {
  name: 'gold',
  objectives: [{ kind: 'latency', metric: 'correctedE2e', quantile: 'p99', maxMs: 1 }],
};
const withTiers = (tiers: unknown) => ({ ...base, slo: { p99Ms: 500, tiers } });

function fieldsOf(input: unknown): string[] {
  try {
    parseCampaign(input);
  } catch (error) {
    if (error instanceof CampaignValidationError) return error.issues.map((i) => `${i.field}: ${i.message}`);
    throw error;
  }
  throw new Error('expected a validation error');
}

describe('campaign slo.tiers', () => {
  it('accepts an ordered list of named tiers and keeps their order; absent means the defaults', () => {
    const bronze = { name: 'bronze', objectives: [{ kind: 'availability', min: 0.9 }] };
    expect(parseCampaign(withTiers([gold, bronze])).slo.tiers?.map((t) => t.name)).toEqual([
      'gold',
      'bronze',
    ]);
    expect(parseCampaign(base).slo.tiers).toBeUndefined();
  });

  it('refuses an empty list', () => {
    expect(fieldsOf(withTiers([]))).toEqual(['slo.tiers: give at least one tier']);
  });

  it('refuses duplicate names, naming the second', () => {
    expect(fieldsOf(withTiers([gold, gold]))).toEqual(['slo.tiers.1.name: duplicate tier gold']);
  });

  it('refuses the reserved SLO-breach name', () => {
    expect(fieldsOf(withTiers([{ ...gold, name: 'SLO-breach' }]))).toEqual([
      'slo.tiers.0.name: SLO-breach is reserved',
    ]);
  });

  it('names a bad objective field and an unknown one', () => {
    const bad = {
      name: 'gold',
      objectives: [
        { kind: 'latency', metric: 'correctedE2e', quantile: 'p98', maxMs: 1 },
        { kind: 'availability', min: 0.99, max: 1 },
        { kind: 'availability', min: 2 },
      ],
    };
    expect(fieldsOf(withTiers([bad])).map((f) => f.split(':')[0])).toEqual([
      'slo.tiers.0.objectives.0.quantile',
      'slo.tiers.0.objectives.1.max',
      'slo.tiers.0.objectives.2.min',
    ]);
  });

  it('names an unknown objective kind and a tier without objectives', () => {
    expect(
      fieldsOf(withTiers([{ name: 'x', objectives: [{ kind: 'p99', maxMs: 1 }] }])).map(
        (f) => f.split(':')[0],
      ),
    ).toEqual(['slo.tiers.0.objectives.0.kind']);
    expect(fieldsOf(withTiers([{ name: 'x', objectives: [] }])).map((f) => f.split(':')[0])).toEqual([
      'slo.tiers.0.objectives',
    ]);
  });

  it('accepts the commented tiers example of examples/chat-smoke.yaml once uncommented', () => {
    const lines = readFileSync(join(__dirname, '../../../examples/chat-smoke.yaml'), 'utf8').split('\n');
    const from = lines.indexOf('  # tiers:');
    expect(from).toBeGreaterThan(0);
    const text = lines.map((l, i) => (i >= from && l.startsWith('  # ') ? `  ${l.slice(4)}` : l)).join('\n');
    expect(parseCampaign(parse(text)).slo.tiers?.map((t) => t.name)).toEqual(['gold', 'bronze']);
  });
});
