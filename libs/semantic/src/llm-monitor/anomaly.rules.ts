/**
 * The anomaly classes of the LLM monitor. `normal` is the one non-anomaly; the order is the
 * class order of the anomaly head's output (index k = probability of ANOMALY_LABELS[k]).
 */
export const ANOMALY_LABELS = [
  'normal',
  'refusal',
  'error-body',
  'truncated-json',
  'degenerate',
  'hallucination-marker',
] as const;
export type AnomalyLabel = (typeof ANOMALY_LABELS)[number];

/** Where a fragment came from: a response's text, or an error body / error message the client kept. */
export type FragmentSource = 'response' | 'error' | 'log';

export interface Fragment {
  readonly source: FragmentSource;
  readonly text: string;
}

export interface RuleHit {
  readonly rule: string;
  readonly label: Exclude<AnomalyLabel, 'normal'>;
}

/**
 * Rules look at this much of a fragment (head and tail): they stay O(1) per fragment however
 * long the response, and the patterns they look for sit at a response's start or end.
 */
export const RULE_SCAN_CHARS = 2_000;

interface PatternRule {
  readonly rule: string;
  readonly label: Exclude<AnomalyLabel, 'normal'>;
  readonly pattern: RegExp;
}

/**
 * Canonical phrasings only: each names a sure anomaly (precision first). Paraphrases are the
 * model's job, behind the rules.
 */
const PATTERN_RULES: readonly PatternRule[] = [
  {
    rule: 'refusal-phrase',
    label: 'refusal',
    pattern:
      /\b(?:I'?m sorry,? but I (?:can(?:no|')t|am unable to)|I (?:can(?:no|')t|won'?t) (?:help|assist) with (?:that|this)|as an AI(?: language)? model,? I)\b/i,
  },
  {
    rule: 'error-json',
    label: 'error-body',
    pattern: /^\s*\{\s*(?:"(?:error|detail)"\s*:|"object"\s*:\s*"error")/,
  },
  {
    rule: 'python-traceback',
    label: 'error-body',
    pattern: /Traceback \(most recent call last\)/,
  },
  {
    rule: 'server-error-text',
    label: 'error-body',
    pattern:
      /\b(?:Internal Server Error|Bad Gateway|Service Unavailable|CUDA out of memory|OutOfMemoryError|AsyncEngineDeadError|EngineDeadError)\b/,
  },
  {
    rule: 'special-token-leak',
    label: 'degenerate',
    pattern: /<\|(?:im_start|im_end|endoftext|eot_id|end_of_text|start_header_id)\|>|\[\/INST\]/,
  },
  {
    rule: 'knowledge-cutoff',
    label: 'hallucination-marker',
    pattern:
      /\b(?:as of my (?:last |latest )?(?:knowledge cutoff|training (?:data|cutoff)|update)|I (?:do not|don't) have (?:access to )?real-time)\b/i,
  },
];

/**
 * A word (or a 1-3 word phrase, starting with a letter: `[0, 0, 0, 0]` is data) repeated back to
 * back this many times is a generation loop.
 */
export const REPEAT_LOOP_TIMES = 4;
const REPEAT_LOOP = new RegExp(
  String.raw`\b([a-z]\w*(?:\s+\w+){0,2})(?:[\s,.]+\1\b){${REPEAT_LOOP_TIMES - 1},}`,
  'i',
);

/**
 * The rules, first of the two thresholds: a hit is an anomaly whatever the model says.
 * Returns the first rule that fires, or null. Pure and synchronous; a few microseconds.
 */
export function matchAnomalyRules(fragment: Fragment): RuleHit | null {
  const text = scanWindow(fragment.text);
  if (text.trim().length === 0) return null;
  for (const r of PATTERN_RULES) if (r.pattern.test(text)) return { rule: r.rule, label: r.label };
  if (isTruncatedJson(fragment.text)) return { rule: 'unclosed-json', label: 'truncated-json' };
  if (REPEAT_LOOP.test(text)) return { rule: 'repeat-loop', label: 'degenerate' };
  if (text.includes('\ufffd')) return { rule: 'replacement-char', label: 'degenerate' };
  return null;
}

function scanWindow(text: string): string {
  if (text.length <= RULE_SCAN_CHARS) return text;
  const half = RULE_SCAN_CHARS / 2;
  return `${text.slice(0, half)}\n${text.slice(text.length - half)}`;
}

/**
 * A fragment that is meant to be JSON (it starts with `{` or `[`, after an optional ```json
 * fence) but ends inside an object, array or string: the generation stopped mid-document.
 */
export function isTruncatedJson(text: string): boolean {
  let body = text.trimStart();
  if (body.startsWith('```')) body = body.slice(body.indexOf('\n') + 1).trimStart();
  if (!(body.startsWith('{') || body.startsWith('['))) return false;
  return jsonOpenDepth(body) > 0;
}

/** Brackets (and an open string) still open at the end of `text`, quotes and escapes honoured. */
export function jsonOpenDepth(text: string): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash escapes the next char
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if ((c === 0x7d || c === 0x5d) && depth > 0) depth--;
  }
  return depth + (inString ? 1 : 0);
}
