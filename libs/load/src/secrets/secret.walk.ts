import { isCredentialHeader, isSecretRef, type Secret } from '@fathom/contracts';

/** One credential in a campaign (or shadow campaign): its dotted field path and value. */
export interface SecretField {
  readonly field: string;
  readonly value: Secret;
}

/** Fields holding user data, not settings: never searched for credentials. */
const DATA_FIELDS = new Set([
  'body',
  'parameters',
  'contract',
  'prompts',
  'requests',
  'dataset',
  'assertions',
  // gRPC request messages and WebSocket frames of steps scenarios.
  'request',
  'send',
]);

/**
 * Every credential of a spec: any `apiKey`, and the credential headers (`isCredentialHeader`)
 * of any `headers` map, wherever the schema puts them (target, qdrant, steps, tools, fallbacks,
 * shadow targets), so a field added later is covered without a list to keep.
 */
export function secretFields(spec: unknown): SecretField[] {
  const out: SecretField[] = [];
  const visit = (node: unknown, path: string[], depth: number) => {
    if (depth > 16 || node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, [...path, String(i)], depth + 1));
      return;
    }
    for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
      if (DATA_FIELDS.has(key)) continue;
      if (key === 'apiKey' && (typeof value === 'string' || isSecretRef(value))) {
        out.push({ field: [...path, key].join('.'), value });
      } else if (key === 'headers' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        for (const [name, header] of Object.entries(value as Record<string, unknown>)) {
          if (isSecretRef(header) || (typeof header === 'string' && isCredentialHeader(name)))
            out.push({ field: [...path, key, name].join('.'), value: header as Secret });
        }
      } else {
        visit(value, [...path, key], depth + 1);
      }
    }
  };
  visit(spec, [], 0);
  return out;
}

/** A copy of `spec` with the value at each dotted `field` replaced. */
export function replaceFields<T>(spec: T, values: ReadonlyMap<string, unknown>): T {
  const copy = structuredClone(spec) as unknown;
  for (const [field, value] of values) {
    const keys = field.split('.');
    let node = copy as Record<string, unknown>;
    for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
    node[keys[keys.length - 1]] = value;
  }
  return copy as T;
}
