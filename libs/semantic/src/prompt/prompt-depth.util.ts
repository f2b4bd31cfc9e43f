/**
 * Nested prompt depth (spec, anomaly class 1: "deep nesting, ambiguous words and delimiters
 * confuse instruction boundaries"): how many instruction-bearing constructs are open at once.
 *
 * Frames that nest: brackets `()[]{}`, template tags `{{ }}` / `{% %}` / `${ }`, quotes
 * (`"`, curly quotes, guillemets, backticks, code fences, and `'` only at word edges so
 * "don't" is not a quote), XML-like tags (`<doc>...</doc>`), chat-template blocks
 * (`<|im_start|>...<|im_end|>`, `[INST]...[/INST]`), and an included prompt: a role marker
 * (`system:`, `### Instruction:`, `<|im_start|>user`) that appears INSIDE another frame opens
 * one more level until that frame closes. Role markers at the top level are the conversation
 * itself and add nothing. A closer that matches no open frame is ignored; a closer that matches
 * a frame further down closes everything above it (recovery from unbalanced text). Linear time.
 */
export type DepthFrameKind = 'bracket' | 'template' | 'quote' | 'tag' | 'chat-block' | 'included-prompt';

export interface PromptDepth {
  depth: number;
  /** Kinds along the deepest path, outermost first. */
  deepestPath: DepthFrameKind[];
}

interface Frame {
  kind: DepthFrameKind;
  /** What closes it. */
  closer: string;
  /** Included-prompt frames sit on top of their host and close with it. */
  included: boolean;
}

const BRACKETS: Record<string, string> = { '(': ')', '[': ']', '{': '}' };
const QUOTES: Record<string, string> = {
  '"': '"',
  '\u201c': '\u201d',
  '\u00ab': '\u00bb',
  '\u300c': '\u300d',
  '`': '`',
};
const TEMPLATE_OPENERS: [string, string][] = [
  ['{{', '}}'],
  ['{%', '%}'],
  ['${', '}'],
];
const CHAT_BLOCKS: [string, string][] = [
  ['<|im_start|>', '<|im_end|>'],
  ['[INST]', '[/INST]'],
  ['<<SYS>>', '<</SYS>>'],
  ['<|start_header_id|>', '<|eot_id|>'],
];
const ROLE_MARKER =
  /^(?:#{1,4}\s*)?(?:system|user|assistant|human|ai|developer|tool|instruction|response|input|output)\s*:/i;

export function nestedPromptDepth(text: string): PromptDepth {
  const stack: Frame[] = [];
  let depth = 0;
  let deepestPath: DepthFrameKind[] = [];
  const open = (frame: Frame): void => {
    stack.push(frame);
    if (stack.length > depth) {
      depth = stack.length;
      deepestPath = stack.map((f) => f.kind);
    }
  };
  const closeTo = (index: number): void => {
    stack.length = index;
    // An included-prompt frame whose host has closed goes with it.
    while (stack.length > 0 && stack[stack.length - 1].included && !hostOpen(stack)) stack.pop();
  };
  const findOpen = (closer: string): number => {
    for (let k = stack.length - 1; k >= 0; k--)
      if (!stack[k].included && stack[k].closer === closer) return k;
    return -1;
  };

  let i = 0;
  const n = text.length;
  let lineStart = true;
  while (i < n) {
    const ch = text[i];
    const top = stack[stack.length - 1];
    const host = topHost(stack);
    const inQuote = host !== undefined && host.kind === 'quote';

    // Code fences: everything inside is literal.
    if (text.startsWith('```', i)) {
      const closing = findOpen('```');
      if (closing !== -1) closeTo(closing);
      else open({ kind: 'quote', closer: '```', included: false });
      i += 3;
      lineStart = false;
      continue;
    }
    if (top?.closer === '```') {
      lineStart = ch === '\n';
      i++;
      continue;
    }

    if (lineStart && stack.length > 0 && ROLE_MARKER.test(text.slice(i, i + 40).trimStart())) {
      if (!(top?.included ?? false)) open({ kind: 'included-prompt', closer: '', included: true });
    }
    lineStart = ch === '\n';
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
      continue;
    }

    // Closers first: a quote char closing its own quote, or a known closer of an open frame.
    const multiCloser = matchCloser(text, i, stack);
    if (multiCloser !== null) {
      closeTo(multiCloser.index);
      i += multiCloser.length;
      continue;
    }
    if (inQuote) {
      // Inside a quote only other quote styles, templates and chat blocks nest.
      const opened = openMulti(text, i, open);
      if (opened > 0) {
        i += opened;
        continue;
      }
      if (QUOTES[ch] !== undefined && ch !== host.closer)
        open({ kind: 'quote', closer: QUOTES[ch], included: false });
      else if (ch === "'" && atWordEdgeOpen(text, i)) open({ kind: 'quote', closer: "'", included: false });
      i++;
      continue;
    }
    const opened = openMulti(text, i, open);
    if (opened > 0) {
      i += opened;
      continue;
    }
    if (BRACKETS[ch] !== undefined) open({ kind: 'bracket', closer: BRACKETS[ch], included: false });
    else if (QUOTES[ch] !== undefined) open({ kind: 'quote', closer: QUOTES[ch], included: false });
    else if (ch === "'" && atWordEdgeOpen(text, i)) open({ kind: 'quote', closer: "'", included: false });
    else if (ch === '<') {
      const tag = /^<([A-Za-z][\w-]{0,30})(?:\s[^<>]{0,200})?>/.exec(text.slice(i, i + 240));
      if (tag !== null) {
        open({ kind: 'tag', closer: `</${tag[1]}>`, included: false });
        i += tag[0].length;
        continue;
      }
    }
    i++;
  }
  return { depth, deepestPath };
}

function topHost(stack: Frame[]): Frame | undefined {
  for (let k = stack.length - 1; k >= 0; k--) if (!stack[k].included) return stack[k];
  return undefined;
}

function hostOpen(stack: Frame[]): boolean {
  // An included prompt always sits directly on a host frame; if it is now on top of nothing
  // or of another included frame, the host is gone.
  const below = stack[stack.length - 2];
  return below !== undefined && !below.included;
}

function openMulti(text: string, i: number, open: (f: Frame) => void): number {
  for (const [opener, closer] of TEMPLATE_OPENERS) {
    if (text.startsWith(opener, i)) {
      open({ kind: 'template', closer, included: false });
      return opener.length;
    }
  }
  for (const [opener, closer] of CHAT_BLOCKS) {
    if (text.startsWith(opener, i)) {
      open({ kind: 'chat-block', closer, included: false });
      return opener.length;
    }
  }
  return 0;
}

function matchCloser(text: string, i: number, stack: Frame[]): { index: number; length: number } | null {
  let hostIndex = stack.length - 1;
  while (hostIndex >= 0 && stack[hostIndex].included) hostIndex--;
  if (hostIndex < 0) return null;
  const host = stack[hostIndex];
  if (host.kind === 'quote') {
    // Inside a quote, brackets and tags are literal: only the quote's own closer ends it.
    if (!text.startsWith(host.closer, i)) return null;
    if (host.closer === "'" && !atWordEdgeClose(text, i)) return null;
    return { index: hostIndex, length: host.closer.length };
  }
  for (let k = hostIndex; k >= 0; k--) {
    const frame = stack[k];
    if (frame.included || frame.closer.length === 0 || frame.closer === "'") continue;
    if (text.startsWith(frame.closer, i)) return { index: k, length: frame.closer.length };
  }
  return null;
}

const WORD = /[\p{L}\p{N}]/u;

function atWordEdgeOpen(text: string, i: number): boolean {
  const before = i === 0 ? ' ' : text[i - 1];
  const after = text[i + 1] ?? ' ';
  return !WORD.test(before) && WORD.test(after);
}

function atWordEdgeClose(text: string, i: number): boolean {
  const after = text[i + 1] ?? ' ';
  return !WORD.test(after);
}
