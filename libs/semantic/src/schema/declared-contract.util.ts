import type { Scenario, ToolContract } from '@fathom/contracts';
import type { JsonSchema } from './schema-drift.util';
import { enumPathsOf } from './observed-shape.util';

/** A declared response schema, with the document its `$ref`s resolve against. */
export interface DeclaredResponse {
  schema: JsonSchema;
  root: JsonSchema;
}

export type DeclaredResponseResult = ({ ok: true } & DeclaredResponse) | { ok: false; reason: string };

const METHODS = ['post', 'get', 'put', 'patch', 'delete'];

/**
 * The response schema a declaration stands for: a JSON Schema as it is, or from an OpenAPI 3 /
 * Swagger document the first 2xx `application/json` response schema of the operation at
 * `invokePath` (or of the document's only path), resolved against the document.
 */
export function declaredResponseSchema(document: JsonSchema, invokePath?: string): DeclaredResponseResult {
  if (typeof document['openapi'] !== 'string' && typeof document['swagger'] !== 'string')
    return { ok: true, schema: document, root: document };
  const paths = isObject(document['paths']) ? document['paths'] : {};
  const keys = Object.keys(paths);
  const key =
    keys.find((k) => k === invokePath) ??
    (invokePath === undefined ? undefined : keys.find((k) => invokePath.endsWith(k))) ??
    (keys.length === 1 ? keys[0] : undefined);
  if (key === undefined)
    return {
      ok: false,
      reason: `OpenAPI document has no path ${invokePath ?? '(one of several, none named)'}`,
    };
  const item = isObject(paths[key]) ? paths[key] : {};
  for (const method of METHODS) {
    const op = item[method];
    if (!isObject(op) || !isObject(op['responses'])) continue;
    const responses = op['responses'];
    const status = Object.keys(responses)
      .filter((s) => /^2(\d\d|XX)$/i.test(s))
      .sort()[0];
    const response = status === undefined ? undefined : responses[status];
    const content = isObject(response) && isObject(response['content']) ? response['content'] : {};
    const json = content['application/json'];
    if (isObject(json) && isObject(json['schema']))
      return { ok: true, schema: json['schema'], root: document };
    // Swagger 2: the schema sits on the response itself.
    if (isObject(response) && isObject(response['schema']))
      return { ok: true, schema: response['schema'], root: document };
  }
  return { ok: false, reason: `OpenAPI path ${key} declares no 2xx application/json response schema` };
}

/** `v1.9` and `1.9` name the same version. */
export function normalizeToolVersion(version: string): string {
  return version.replace(/^v(?=\d)/i, '');
}

/**
 * A campaign's declared contract of one tool, compiled once: the response schema per version
 * (`*` for any other), and the enum paths whose values the load engine should keep in shapes.
 */
export class DeclaredToolContract {
  private readonly byVersion = new Map<string, DeclaredResponseResult>();
  private readonly any: DeclaredResponseResult | null;
  readonly valuePaths: ReadonlySet<string>;

  constructor(
    readonly contract: ToolContract,
    invokePath?: string,
  ) {
    let any: DeclaredResponseResult | null = null;
    const valuePaths = new Set<string>();
    for (const [version, document] of Object.entries(contract.responses)) {
      const declared = declaredResponseSchema(document, invokePath);
      if (version === '*') any = declared;
      else this.byVersion.set(normalizeToolVersion(version), declared);
      if (declared.ok) for (const p of enumPathsOf(declared.schema, declared.root)) valuePaths.add(p);
    }
    this.any = any;
    this.valuePaths = valuePaths;
  }

  /** The declared response of `version`; null when the contract declares neither it nor `*`. */
  forVersion(version: string): DeclaredResponseResult | null {
    return this.byVersion.get(normalizeToolVersion(version)) ?? this.any;
  }
}

/** An HTTP step's tool name: its contract's, else the `/tools/<name>/` of its path, else the step's name. */
export function httpStepToolName(step: { name: string; path: string; contract?: ToolContract }): string {
  return (step.contract?.tool ?? /\/tools\/([\w.-]+)/.exec(step.path)?.[1] ?? step.name).slice(0, 64);
}

/**
 * The tool contracts a campaign's scenario declares, by the tool name the load engine records
 * (tool-chain tools and HTTP steps with a `contract`; the first declaration of a name wins).
 */
export function declaredToolContracts(scenario: Scenario): Map<string, DeclaredToolContract> {
  const out = new Map<string, DeclaredToolContract>();
  if (scenario.type === 'tool-chain')
    for (const t of scenario.tools) {
      const name = (t.contract?.tool ?? t.name).slice(0, 64);
      if (t.contract && !out.has(name)) out.set(name, new DeclaredToolContract(t.contract, t.invokePath));
    }
  if (scenario.type === 'http')
    for (const step of scenario.steps) {
      if (step.kind === 'grpc' || step.kind === 'websocket') continue;
      const name = httpStepToolName(step);
      if (step.contract && !out.has(name)) out.set(name, new DeclaredToolContract(step.contract, step.path));
    }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
