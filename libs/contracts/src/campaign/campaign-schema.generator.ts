import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { z } from 'zod';
import { CampaignSpecSchema } from './campaign.schema';

/**
 * The campaign language as a JSON Schema (draft 2020-12) and as a Markdown field reference, both
 * generated from the zod schemas that validate campaigns, so neither can drift from what Fathom
 * accepts. Field descriptions come from the `/** ... *\/` comments on the zod object properties
 * (read with the TypeScript parser), matched to the schema's objects by their property names.
 * Dev-time only (it reads the sources and needs `typescript`): `npm run schema` writes the files,
 * campaign-schema.generator.spec.ts fails when they are stale. Not exported from the index.
 */

/** Where the published schema lives, relative to the repository root (editors point here). */
export const CAMPAIGN_SCHEMA_PATH = 'schema/campaign.schema.json';
export const CAMPAIGN_REFERENCE_PATH = 'docs/campaign-reference.md';

type JsonSchema = {
  [key: string]: unknown;
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  additionalProperties?: boolean | JsonSchema;
};

interface DocumentedLiteral {
  keys: Set<string>;
  docs: Map<string, string>;
}

function jsDocText(node: ts.Node, source: ts.SourceFile): string | null {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  const doc = ranges
    .map((r) => source.text.slice(r.pos, r.end))
    .filter((c) => c.startsWith('/**'))
    .at(-1);
  if (!doc) return null;
  return doc
    .replace(/^\/\*\*|\*\/$/g, '')
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, '').trim())
    .filter(Boolean)
    .join(' ');
}

/** Every object literal in the sources with at least one documented property. */
export function documentedLiterals(sources: readonly string[]): DocumentedLiteral[] {
  const found: DocumentedLiteral[] = [];
  for (const text of sources) {
    const source = ts.createSourceFile('campaign.ts', text, ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node): void => {
      if (ts.isObjectLiteralExpression(node)) {
        const keys = new Set<string>();
        const docs = new Map<string, string>();
        for (const property of node.properties) {
          if (!ts.isPropertyAssignment(property) && !ts.isShorthandPropertyAssignment(property)) continue;
          const key = property.name.getText(source).replace(/^['"]|['"]$/g, '');
          keys.add(key);
          const doc = jsDocText(property, source);
          if (doc) docs.set(key, doc);
        }
        if (docs.size) found.push({ keys, docs });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

/** Gives each property its comment: from the literals whose keys are all properties of this object, the largest first. */
function describe(schema: JsonSchema, literals: readonly DocumentedLiteral[]): void {
  if (schema.properties) {
    const names = new Set(Object.keys(schema.properties));
    const matching = literals
      .filter((l) => [...l.keys].every((k) => names.has(k)) && (l.keys.size >= 2 || names.size === 1))
      .sort((a, b) => b.keys.size - a.keys.size);
    for (const [name, property] of Object.entries(schema.properties)) {
      const doc = matching.find((l) => l.docs.has(name))?.docs.get(name);
      if (doc && !property.description) property.description = doc;
      describe(property, literals);
    }
  }
  for (const child of [
    schema.items,
    ...(schema.oneOf ?? []),
    ...(schema.anyOf ?? []),
    ...(schema.allOf ?? []),
  ])
    if (child) describe(child, literals);
}

function contractSources(root: string): string[] {
  const dirs = ['campaign', 'events'].map((d) => join(root, 'libs/contracts/src', d));
  return dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts') && !f.endsWith('.generator.ts'))
      .map((f) => readFileSync(join(dir, f), 'utf8')),
  );
}

/** The published JSON Schema of a campaign file (what `fathom validate` and `POST /v1/campaigns` accept). */
export function campaignJsonSchema(root: string): JsonSchema {
  const generated = z.toJSONSchema(CampaignSpecSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  describe(generated, documentedLiterals(contractSources(root)));
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'Fathom campaign',
    description:
      'A Fathom campaign file (YAML or JSON): target, scenario, load, SLO. Check one with `fathom validate FILE`; field reference: docs/campaign-reference.md.',
    ...rest,
  };
}

const code = (v: unknown) => `\`${JSON.stringify(v)}\``;

function typeOf(schema: JsonSchema): string {
  if (schema.const !== undefined) return code(schema.const);
  if (schema.enum) return schema.enum.map(code).join(' | ');
  const options = schema.oneOf ?? schema.anyOf;
  if (options) {
    const key = discriminator(options);
    if (key) return `object by \`${key}\`: ${options.map((o) => code(o.properties![key].const)).join(' | ')}`;
    return options.map(typeOf).join(' | ');
  }
  if (schema.type === 'array') return `${schema.items ? typeOf(schema.items) : 'any'}[]`;
  if (schema.type === 'object' && !schema.properties) return 'object (map)';
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type ?? 'any');
  return schema.format ? `${type} (${String(schema.format)})` : type;
}

function constraints(schema: JsonSchema): string {
  const parts: string[] = [];
  const add = (key: string, label: string) => {
    const value = schema[key];
    // zod bounds every integer by the safe-integer range: not worth a mention.
    if (value !== undefined && Math.abs(Number(value)) !== Number.MAX_SAFE_INTEGER)
      parts.push(`${label} ${String(value)}`);
  };
  add('minimum', '>=');
  add('exclusiveMinimum', '>');
  add('maximum', '<=');
  add('exclusiveMaximum', '<');
  add('minLength', 'length >=');
  add('maxLength', 'length <=');
  add('minItems', 'items >=');
  add('maxItems', 'items <=');
  if (schema.pattern !== undefined) parts.push(`pattern \`${String(schema.pattern)}\``);
  if (schema.type === 'integer') parts.unshift('integer');
  return parts.join(', ');
}

/** The discriminator (`type` or `kind`) of a union's object options, when every option has one. */
function discriminator(options: JsonSchema[]): string | null {
  for (const key of ['type', 'kind']) {
    if (options.every((o) => o.properties?.[key]?.const !== undefined)) return key;
  }
  return null;
}

interface Row {
  field: string;
  type: string;
  required: boolean;
  default: unknown;
  constraints: string;
  description: string;
}

function rows(schema: JsonSchema, path: string, required: boolean, out: Row[]): void {
  if (path) {
    out.push({
      field: path,
      type: typeOf(schema),
      required,
      default: schema.default,
      constraints: constraints(schema),
      description: schema.description ?? '',
    });
  }
  const options = schema.oneOf ?? schema.anyOf;
  if (options) {
    const key = discriminator(options);
    for (const option of options) {
      if (!option.properties && !option.items) continue;
      const label = key ? `${path}{${key}=${String(option.properties![key].const)}}` : path;
      rowsOfObject(option, label, out, key);
    }
    return;
  }
  if (schema.type === 'array' && schema.items && (schema.items.properties || schema.items.oneOf))
    rows(schema.items, `${path}[]`, true, out);
  else if (schema.properties) rowsOfObject(schema, path, out, null);
}

function rowsOfObject(schema: JsonSchema, path: string, out: Row[], skip: string | null): void {
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (name === skip) continue;
    rows(property, path ? `${path}.${name}` : name, (schema.required ?? []).includes(name), out);
  }
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The field reference in Markdown: one table per top-level field. */
export function campaignFieldReference(schema: JsonSchema): string {
  const lines = [
    '# Campaign file reference',
    '',
    '<!-- Generated by `npm run schema` from the zod schemas in libs/contracts/src/campaign/; do not edit. -->',
    '',
    `Every field a campaign file may have. The same rules as a JSON Schema: [\`${CAMPAIGN_SCHEMA_PATH}\`](../${CAMPAIGN_SCHEMA_PATH})`,
    '(put `# yaml-language-server: $schema=<path or URL of that file>` on the first line of a YAML',
    'campaign, or `"$schema": "..."` in a JSON one, for completion and checks in your editor).',
    '`fathom validate FILE` checks a file without running it; `examples/` has one campaign per',
    'scenario type and per anomaly class. `a{type=chat}.b` is field `b` of `a` when `a.type` is `chat`.',
    '',
  ];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const out: Row[] = [];
    rows(property, name, (schema.required ?? []).includes(name), out);
    lines.push(`## \`${name}\``, '');
    lines.push(
      '| field | type | required | default | constraints | description |',
      '|---|---|---|---|---|---|',
    );
    for (const row of out) {
      lines.push(
        `| \`${row.field}\` | ${cell(row.type)} | ${row.required ? 'yes' : ''} | ${
          row.default === undefined ? '' : cell(code(row.default))
        } | ${cell(row.constraints)} | ${cell(row.description)} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}

/** The two generated files, by path relative to the repository root. */
export function campaignSchemaFiles(root: string): Record<string, string> {
  const schema = campaignJsonSchema(root);
  return {
    [CAMPAIGN_SCHEMA_PATH]: `${JSON.stringify(schema, null, 2)}\n`,
    [CAMPAIGN_REFERENCE_PATH]: campaignFieldReference(schema),
  };
}
