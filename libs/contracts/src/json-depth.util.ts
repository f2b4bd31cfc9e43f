/**
 * Deepest nesting accepted in a request body or campaign. Campaigns, OpenAPI contracts and chat
 * bodies sit well under it; thousands of levels overflow the stack of recursive code downstream
 * (validation, encoding, storage) and gave a 500.
 */
export const MAX_INPUT_DEPTH = 64;

/** Whether `value` nests objects/arrays deeper than `max`; iterative, so any depth is safe to ask. */
export function nestsDeeperThan(value: unknown, max: number = MAX_INPUT_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}
