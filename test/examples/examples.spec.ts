import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadSync } from '@grpc/proto-loader';
import { parse } from 'yaml';
import { z } from 'zod';
import { CampaignSpecSchema, ScenarioSchema, StepSchema, type CampaignSpec } from '@fathom/contracts';

const ROOT = join(__dirname, '..', '..');
const DIR = join(ROOT, 'examples');
const files = readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f));
const campaigns = new Map(files.map((f) => [f, readFileSync(join(DIR, f), 'utf8')]));
const spec = (file: string): CampaignSpec => CampaignSpecSchema.parse(parse(campaigns.get(file)!));

/**
 * The five anomaly classes of the spec, each with its example and what makes that example provoke
 * or detect the class (a campaign that lost the field would no longer be an example of it).
 */
const ANOMALY_EXAMPLES: Record<string, [string, (c: CampaignSpec) => boolean]> = {
  'prompt explosion': [
    'anomaly-prompt-explosion.yaml',
    (c) => c.scenario.type === 'chat' && c.scenario.perturbation !== undefined,
  ],
  'RAG recall avalanche': [
    'anomaly-rag-recall-avalanche.yaml',
    (c) => c.scenario.type === 'rag' && c.scenario.layer === 'retrieve',
  ],
  hallucination: ['anomaly-hallucination.yaml', (c) => c.scenario.type === 'chat' && c.scenario.logprobs],
  'tool schema drift': [
    'anomaly-tool-schema-drift.yaml',
    (c) =>
      c.scenario.type === 'tool-chain' &&
      c.scenario.tools.some((t) => t.contract !== undefined && t.fallback !== undefined),
  ],
  'multi-agent oscillation': [
    'anomaly-agent-oscillation.yaml',
    (c) =>
      c.scenario.type === 'agents' &&
      (c.slo.tiers ?? []).some((t) => t.objectives.some((o) => o.kind === 'agent-success')),
  ],
};

describe('examples/', () => {
  it.each(files)('%s is a valid campaign that names the JSON Schema', (file) => {
    const text = campaigns.get(file)!;
    expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=../schema/campaign.schema.json');
    const parsed = CampaignSpecSchema.safeParse(parse(text));
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it('has a campaign for every scenario type', () => {
    const types = ScenarioSchema.options.map((o) => o.shape.type.value).sort();
    const covered = new Set(files.map((f) => spec(f).scenario.type));
    expect(types.filter((t) => !covered.has(t))).toEqual([]);
  });

  it('has a campaign for every step kind', () => {
    const kinds = StepSchema.options
      .map((o) => {
        const kind = o.shape.kind;
        return (kind instanceof z.ZodOptional ? kind.unwrap() : kind).value;
      })
      .sort();
    const covered = new Set(
      files.flatMap((f) => {
        const s = spec(f).scenario;
        return s.type === 'http' ? s.steps.map((step) => step.kind ?? 'http') : [];
      }),
    );
    expect(kinds.filter((k) => !covered.has(k))).toEqual([]);
  });

  it('calls gRPC methods that its proto files define', () => {
    for (const f of files) {
      const s = spec(f).scenario;
      if (s.type !== 'http') continue;
      for (const step of s.steps) {
        if (step.kind !== 'grpc' || !('path' in step.proto)) continue;
        const service = loadSync(join(ROOT, step.proto.path))[step.service] as Record<string, unknown>;
        expect([f, step.name, Object.keys(service ?? {})]).toEqual([
          f,
          step.name,
          expect.arrayContaining([step.method]),
        ]);
      }
    }
  });

  it.each(Object.entries(ANOMALY_EXAMPLES))(
    'has a campaign for the anomaly class %s',
    (_, [file, provokes]) => {
      expect(files).toContain(file);
      expect(provokes(spec(file))).toBe(true);
    },
  );
});
