import { checkAgainstSchema, isRefusal, type JsonSchema, type ParsedToolCall } from '@fathom/semantic';
import type { TargetObservation } from '@fathom/contracts';

type Checks = Required<Pick<TargetObservation, 'toolCalls' | 'refused' | 'schemaValid'>>;

/**
 * What the shadow comparison reads of one answer beyond timing: its tool calls in canonical
 * form, whether it refused, and whether it conforms to what the request declared
 * (`response_format`, the `parameters` of each tool it called).
 */
export function answerChecks(
  request: Record<string, unknown>,
  answer: { content: string; refusal: string; parsedToolCalls: readonly ParsedToolCall[] },
): Checks {
  const toolCalls = answer.parsedToolCalls.map((c) => ({
    name: c.name,
    arguments: canonicalJson(c.arguments),
  }));
  return {
    toolCalls,
    refused: isRefusal(answer.content, answer.refusal),
    schemaValid: schemaValid(request, answer),
  };
}

/** `text` as JSON with object keys sorted (so key order never counts as a difference); the text itself when it is not JSON. */
export function canonicalJson(text: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(text)));
  } catch {
    return text;
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isObject(value))
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys(value[k])]),
    );
  return value;
}

/** null when the request declared nothing (no JSON response format, no tool called). */
function schemaValid(
  request: Record<string, unknown>,
  answer: { content: string; parsedToolCalls: readonly ParsedToolCall[] },
): boolean | null {
  let checked = false;
  let valid = true;
  const format = request['response_format'];
  // A tool call answers instead of content: the response format applies to content only.
  if (isObject(format) && answer.parsedToolCalls.length === 0) {
    if (format['type'] === 'json_object') {
      checked = true;
      valid &&= isObject(parseJson(answer.content));
    } else if (format['type'] === 'json_schema') {
      checked = true;
      const declared = isObject(format['json_schema']) ? format['json_schema']['schema'] : undefined;
      const value = parseJson(answer.content);
      valid &&=
        value !== NOT_JSON && (!isObject(declared) || checkAgainstSchema(declared, value).length === 0);
    }
  }
  if (answer.parsedToolCalls.length > 0) {
    checked = true;
    const tools = Array.isArray(request['tools']) ? request['tools'] : [];
    for (const call of answer.parsedToolCalls) {
      const tool = tools.find(
        (t) => isObject(t) && isObject(t['function']) && t['function']['name'] === call.name,
      ) as { function: { parameters?: unknown } } | undefined;
      const args = parseJson(call.arguments);
      // An undeclared tool, arguments that are no JSON object, or ones its parameters reject.
      if (tool === undefined || !isObject(args)) valid = false;
      else if (isObject(tool.function.parameters))
        valid &&= checkAgainstSchema(tool.function.parameters as JsonSchema, args).length === 0;
    }
  }
  return checked ? valid : null;
}

const NOT_JSON = Symbol('not JSON');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
