import type { StepAssertion } from '@fathom/contracts';

/** What an assertion sees of one step's output (see StepAssertionSchema for each kind's status and body). */
export interface StepResponse {
  status: number;
  latencyMs: number;
  /** ms from the step's start to its first message; null when none arrived. */
  firstMessageMs: number | null;
  body: string;
}

export interface CompiledAssertion {
  name: string;
  check(response: StepResponse, json: () => unknown): boolean;
}

/** `$.a.b[0].c` against a parsed JSON value; undefined when a segment is missing. */
export function jsonPathValue(root: unknown, path: string): unknown {
  let value: unknown = root;
  for (const [, key, index] of path.slice(1).matchAll(/\.([A-Za-z_][\w-]*)|\[(\d+)\]/g)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = key !== undefined ? (value as Record<string, unknown>)[key] : (value as unknown[])[Number(index)];
  }
  return value;
}

/** Compiles a step's named assertions once (regexes included), for use on every iteration. */
export function compileAssertion(assertion: StepAssertion): CompiledAssertion {
  switch (assertion.kind) {
    case 'status':
      return { name: assertion.name, check: (r) => r.status === assertion.equals };
    case 'latency':
      return { name: assertion.name, check: (r) => r.latencyMs < assertion.belowMs };
    case 'first-message':
      return {
        name: assertion.name,
        check: (r) => r.firstMessageMs !== null && r.firstMessageMs < assertion.belowMs,
      };
    case 'body-contains':
      return { name: assertion.name, check: (r) => r.body.includes(assertion.text) };
    case 'regex': {
      const pattern = new RegExp(assertion.pattern);
      return { name: assertion.name, check: (r) => pattern.test(r.body) };
    }
    case 'jsonpath':
      return {
        name: assertion.name,
        check: (_r, json) => {
          const value = jsonPathValue(json(), assertion.path);
          if (assertion.equals !== undefined) return value === assertion.equals;
          return (value !== undefined) === (assertion.exists ?? true);
        },
      };
  }
}
