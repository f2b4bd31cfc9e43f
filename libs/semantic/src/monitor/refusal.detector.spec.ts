import { isRefusal } from './refusal.detector';

describe('isRefusal', () => {
  it.each([
    "I'm sorry, but I can't help with that.",
    'I’m sorry, but I cannot assist with this request.',
    'I am afraid I cannot provide that information.',
    "Sorry, I can't help with that.",
    'I cannot comply with this request.',
    'As an AI language model, I cannot give medical advice.',
    'I must respectfully decline.',
    "I'm not able to share personal data.",
  ])('names %j a refusal', (text) => expect(isRefusal(text)).toBe(true));

  it.each([
    'The quarterly report shows revenue up 12 %.',
    "Sure! Here's how to reset the router.",
    'I can help with that: first, open the settings.',
    // A declining phrase quoted deep in an answer is no refusal.
    `${'Context. '.repeat(30)}The model said "I'm sorry, but I can't help with that".`,
    '',
  ])('does not name %j a refusal', (text) => expect(isRefusal(text)).toBe(false));

  it("takes the API's refusal field as a refusal whatever the text", () => {
    expect(isRefusal('', 'I cannot produce that schema.')).toBe(true);
    expect(isRefusal('Fine text', '   ')).toBe(false);
  });
});
