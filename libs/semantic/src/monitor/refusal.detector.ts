/**
 * Opening phrases with which chat models decline a request ("I'm sorry, but I can't help with
 * that", "As an AI language model, I cannot ..."). Looked for in the first 200 characters only:
 * a refusal says so at once, and an answer that quotes such a phrase later is no refusal.
 */
const REFUSAL_OPENINGS: readonly RegExp[] = [
  /\b(?:i'?m|i am) (?:sorry|afraid),? (?:but )?(?:i|we) (?:can(?:'|no)?t|cannot|won'?t|will not|am not able|'m not able|am unable|'m unable)\b/,
  /^\s*(?:sorry,? )?(?:i|we) (?:can(?:'|no)?t|cannot|won'?t|will not|am unable to|'m unable to|am not able to|'m not able to) (?:help|assist|comply|provide|do that|fulfil|fulfill|answer|support|engage|share)\b/,
  /\bas an ai(?: language model| assistant| model)?,? i (?:can(?:'|no)?t|cannot|am not able|don'?t|do not|won'?t)\b/,
  /\b(?:i|we) (?:must|have to) (?:respectfully )?(?:decline|refuse)\b/,
  /\bi'?m not (?:able|allowed|permitted) to (?:help|assist|provide|answer|share)\b/,
  /\bthis request (?:violates|goes against)\b/,
];

const HEAD_CHARS = 200;

/**
 * Whether a chat answer is a refusal: the API's own `refusal` field (structured outputs) is set,
 * or the text opens with a declining phrase. Curly apostrophes count as straight ones.
 */
export function isRefusal(content: string, refusalField = ''): boolean {
  if (refusalField.trim().length > 0) return true;
  const head = content
    .slice(0, HEAD_CHARS)
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'");
  return REFUSAL_OPENINGS.some((re) => re.test(head));
}
