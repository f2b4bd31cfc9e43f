import type { AnomalyLabel } from './anomaly.rules';

/**
 * A generated, labelled corpus of response and error fragments: what the anomaly head is
 * trained on (`train`) and judged on (`held-out`). The two splits share slot fillers (topics,
 * numbers, names) but not templates: a held-out refusal is phrased in a way no training refusal
 * is, so the held-out figures measure how far the head carries past the phrasings it saw (and
 * past the rules, which know only the canonical ones). Deterministic for a seed.
 *
 * The phrasings are written after the public shapes of these failures (OpenAI/vLLM error
 * bodies, Python tracebacks, chat-model refusals and knowledge-cutoff disclaimers, loops and
 * leaked chat-template tokens); they are not captured traffic. A model trained on them is a
 * starting point, retrain it on a target's own labelled fragments for production.
 */
export type CorpusSplit = 'train' | 'held-out';

export interface LabelledFragment {
  readonly text: string;
  readonly label: AnomalyLabel;
}

type Pick = <T>(xs: readonly T[]) => T;
type Template = (p: Pick, n: () => number) => string;

const TOPICS = [
  'the quarterly revenue report',
  'photosynthesis',
  'the Kubernetes rollout',
  'a binary search tree',
  'the French Revolution',
  'the refund policy',
  'TCP congestion control',
  'the marketing plan',
  'gradient descent',
  'the onboarding checklist',
  'a sourdough recipe',
  'the vacation schedule',
];
const HARM = [
  'build a weapon',
  'pick a lock on a neighbour’s door',
  'write malware',
  'bypass the licence check',
  'find someone’s home address',
  'forge a signature',
];
const NAMES = ['Alice', 'Bob', 'Chen', 'Dana', 'Emeka', 'Farah', 'Goran', 'Hiro'];
const WORDS = ['data', 'model', 'the', 'result', 'system', 'value', 'token', 'answer', 'loop', 'okay'];
const FIELDS = ['id', 'name', 'status', 'items', 'total', 'created_at', 'score', 'tags'];
const MODELS = ['llama-3-8b', 'qwen2-7b', 'mistral-7b', 'phi-3-mini'];

/** Plain sentences of an ordinary answer, for long normal responses (wider vocabulary). */
const PROSE = [
  'The river runs through the old part of the city and past the market.',
  'Most teams start with a small pilot before they change the whole process.',
  'Energy prices rose in the winter, then fell back when demand eased.',
  'She wrote the first draft in a week and spent a month revising it.',
  'A cache keeps recent results close, so repeated requests return faster.',
  'The museum opens at nine and is free on the first Sunday of the month.',
  'Water boils at a lower temperature at high altitude because the pressure is lower.',
  'Good documentation explains why a design was chosen, not only how it works.',
  'The committee will vote on the budget after the public consultation closes.',
  'Stretch before running, drink water, and increase the distance slowly.',
  'The network team moved the region to new hardware over the weekend.',
  'History shows that trade routes shaped where large cities grew.',
  'For a fair comparison, measure both versions on the same machine and data.',
  'His report covers memory use, request latency and the cost per token.',
  'Design reviews catch problems early, when they are still cheap to fix.',
  'The science behind it is simple: heat moves from warm objects to cold ones.',
];

/**
 * A long ordinary answer of several sentences; half of them cut at a word boundary, as a
 * `max_tokens` limit cuts a response (no closing punctuation is not an anomaly by itself).
 */
function prose(p: Pick, n: () => number): string {
  const text = Array.from({ length: 2 + (n() % 5) }, () => p(PROSE)).join(' ');
  if (n() % 2 === 0) return text;
  const words = text.split(' ');
  return words.slice(0, Math.max(4, words.length - 1 - (n() % 12))).join(' ');
}

function json(p: Pick, n: () => number, close: boolean): string {
  const fields = [p(FIELDS), p(FIELDS), p(FIELDS)];
  const body = `{"${fields[0]}": ${n()}, "${fields[1]}": "${p(NAMES)}", "${fields[2]}": [${n()}, ${n()}, {"note": "${p(TOPICS)}"`;
  if (close) return `${body}}]}`;
  // Cut somewhere inside: after a value, inside a string, or after a comma.
  return p([
    body,
    `${body}, "extra": "part`,
    `{"${fields[0]}": ${n()}, "${fields[1]}": [`,
    `[{"${p(FIELDS)}": "${p(NAMES)}"}, {"${p(FIELDS)}": `,
  ]);
}

const TEMPLATES: Record<CorpusSplit, Record<AnomalyLabel, readonly Template[]>> = {
  train: {
    normal: [
      (p, n) =>
        `Here is a short summary of ${p(TOPICS)}: it covers ${n()} key points, and the main takeaway is that planning ahead saves time.`,
      (p) =>
        `Sure! ${p(TOPICS)} works in three steps. First, gather the inputs. Second, process them. Third, review the output.`,
      (p, n) =>
        `The answer is ${n()}. To get there, multiply the two values and subtract the offset, as shown in ${p(TOPICS)}.`,
      (p, n) => json(p, n, true),
      (p) =>
        `\`\`\`python\ndef total(items):\n    return sum(i.price for i in items)\n\`\`\`\nThis returns the total for ${p(TOPICS)}.`,
      (p) =>
        `Sorry for the confusion earlier. Here is the corrected version of ${p(TOPICS)}, with the dates fixed.`,
      (p, n) =>
        `The standard error of the mean was ${n()}.${n()} in the second trial of ${p(TOPICS)}, well inside the expected range.`,
      (p) =>
        `${p(NAMES)} asked about ${p(TOPICS)}. In short: yes, it is possible, and the documentation explains the options.`,
      (p, n) =>
        `1. Open the settings.\n2. Select ${p(FIELDS)}.\n3. Enter ${n()} and save.\nThat completes ${p(TOPICS)}.`,
      (p) =>
        `I can help with that. ${p(TOPICS)} is best explained with an example, so let us walk through one together.`,
      (p, n) =>
        `The server returned status 200 after ${n()} ms, and the response matched the expected schema for ${p(FIELDS)}.`,
      (p) =>
        `Great question. The key difference is that ${p(TOPICS)} depends on context, whereas the alternative is fixed.`,
      (p) =>
        `When the API answers with an error, log the status code and the request id, then report ${p(TOPICS)} as failed.`,
      (p, n) => `A JSON object starts with { and ends with }, for example {"${p(FIELDS)}": ${n()}}.`,
      prose,
      prose,
      (p, n) => `${p(NAMES)} asked about ${p(TOPICS)}. ${prose(p, n)}`,
    ],
    refusal: [
      (p) => `I'm sorry, but I can't help with that request to ${p(HARM)}.`,
      (p) => `I cannot assist with this. Helping someone ${p(HARM)} goes against my guidelines.`,
      (p) => `As an AI language model, I cannot ${p(HARM)} or provide instructions for it.`,
      (p) => `I'm sorry, but I am unable to provide information on how to ${p(HARM)}.`,
      (p) => `I won't help with that. If you want to ${p(HARM)}, I have to decline.`,
      (p) => `Sorry, I can't do that. My guidelines do not allow me to help ${p(HARM)}.`,
      () => `I'm not able to help with this request.`,
      (p) => `I must decline to ${p(HARM)}. Is there something else I can help you with?`,
    ],
    'error-body': [
      (p) =>
        `{"error": {"message": "The model \`${p(MODELS)}\` does not exist.", "type": "invalid_request_error", "code": 404}}`,
      (_, n) =>
        `{"object": "error", "message": "This model's maximum context length is ${n()} tokens.", "type": "BadRequestError", "param": null, "code": 400}`,
      () =>
        `Traceback (most recent call last):\n  File "server.py", line 88, in generate\n    out = engine.step()\nRuntimeError: CUDA error: device-side assert triggered`,
      () =>
        `<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>`,
      (p) =>
        `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB while serving ${p(MODELS)}`,
      () => `{"detail": "Internal Server Error"}`,
      () => `upstream connect error or disconnect/reset before headers. reset reason: connection termination`,
      () => `vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.`,
      (p, n) => `{"error": "rate limit exceeded", "retry_after": ${n()}, "model": "${p(MODELS)}"}`,
      () => `503 Service Unavailable: the server is temporarily unable to handle the request.`,
    ],
    'truncated-json': [
      (p, n) => json(p, n, false),
      (p, n) => `\`\`\`json\n${json(p, n, false)}`,
      (p, n) =>
        `{"${p(FIELDS)}": "${p(NAMES)}", "${p(FIELDS)}": ${n()}, "${p(FIELDS)}": {"nested": [${n()}, ${n()}`,
      (p) => `[{"name": "${p(NAMES)}", "role": "admin"}, {"name": "${p(NAMES)}", "role": "`,
    ],
    degenerate: [
      (p) =>
        Array.from({ length: 12 }, () => p(WORDS))
          .join(' ')
          .replace(/(\w+)/, '$1 $1 $1 $1 $1'),
      (p) => `${p(TOPICS)} is ${Array(8).fill('very').join(' ')} important`,
      (p) => `The answer is<|im_end|><|im_start|>assistant\nThe answer is about ${p(TOPICS)}`,
      (p) => `${p(TOPICS)}. ${p(TOPICS)}. ${p(TOPICS)}. ${p(TOPICS)}. ${p(TOPICS)}.`,
      (p) => `[/INST] ${p(TOPICS)} [/INST] ${p(TOPICS)}`,
      (p) => `I think I think I think I think I think ${p(WORDS)}`,
      () => `\ufffd\ufffd\ufffd garbled \ufffd output \ufffd\ufffd`,
      (p) => `${p(TOPICS)} ;;;; ,,,, )))) ]]]] ${p(WORDS)} ::::`,
    ],
    'hallucination-marker': [
      (p) =>
        `As of my last knowledge update, ${p(TOPICS)} had not been released, so I cannot confirm the details.`,
      (p) => `As of my knowledge cutoff, the latest figures for ${p(TOPICS)} were not available.`,
      (p) => `I don't have real-time information, but ${p(TOPICS)} probably changed since my training data.`,
      (p) => `I do not have access to real-time data, so the current status of ${p(TOPICS)} may differ.`,
      (p, n) =>
        `According to a ${n()} study by ${p(NAMES)} et al. that I cannot verify, ${p(TOPICS)} improves results by ${n()} %.`,
      (p) =>
        `I might be wrong here, but I believe ${p(TOPICS)} was invented by ${p(NAMES)}; please double-check this.`,
    ],
  },
  'held-out': {
    normal: [
      (p, n) =>
        `Thanks for waiting. The updated estimate for ${p(TOPICS)} is ${n()} hours, including review.`,
      (p) =>
        `Good news: ${p(TOPICS)} passed every check. You can proceed with the next step whenever you are ready.`,
      (_, n) => `[${n()}, ${n()}, ${n()}, ${n()}]`,
      (p, n) => `{"${p(FIELDS)}": "${p(NAMES)}", "${p(FIELDS)}": ${n()}}`,
      (p) => `Apologies for the late reply! ${p(NAMES)} has now reviewed ${p(TOPICS)} and left comments.`,
      (p, n) => `Here is what changed in ${p(TOPICS)}. ${prose(p, n)}`,
      (p, n) =>
        `Error handling in ${p(TOPICS)} should log the failure, retry up to ${n()} times, then alert the on-call.`,
      (p) => `To summarise ${p(TOPICS)}: keep it simple, measure first, and change one thing at a time.`,
      (p) =>
        `Here is how ${p(NAMES)} would approach ${p(TOPICS)}: start with the data, then pick the method.`,
      // Hard negatives: anomaly vocabulary in an ordinary answer.
      (p) => `If the server returns a 503 Service Unavailable, retry ${p(TOPICS)} with exponential backoff.`,
      (p) => `The parser may raise a ValueError when the input is empty, so validate ${p(FIELDS)} first.`,
      (p, n) =>
        `As of ${n()}, ${p(NAMES)} no longer maintains ${p(TOPICS)}; the new owner is listed in the README.`,
      (p) => `I'm not able to find ${p(FIELDS)} in the file you sent; could you share the full export?`,
    ],
    refusal: [
      (p) => `Unfortunately that is not something I'm able to assist with, since it would ${p(HARM)}.`,
      (p) => `I have to decline: helping to ${p(HARM)} isn't something I can do.`,
      (p) => `That request falls outside what I can help with. I can't ${p(HARM)}.`,
      (p) => `My apologies, I'm unable to support requests to ${p(HARM)}.`,
      (p) => `I'm sorry, but I can't help you ${p(HARM)}.`,
    ],
    'error-body': [
      (p) => `{"error": {"message": "Rate limit reached for ${p(MODELS)}", "type": "rate_limit_error"}}`,
      () =>
        `RuntimeError: CUDA error: an illegal memory access was encountered\nCompile with TORCH_USE_CUDA_DSA to enable device-side assertions.`,
      () => `upstream request timeout`,
      () => `<html><body><h1>504 Gateway Time-out</h1>The server didn't respond in time.</body></html>`,
      (p) => `ValueError: the model ${p(MODELS)} is not loaded; the engine errored and must restart`,
      () => `Internal Server Error`,
    ],
    'truncated-json': [
      (p, n) => `Here is the result: {"${p(FIELDS)}": ${n()}, "${p(FIELDS)}": ["${p(NAMES)}", "`,
      (p, n) => json(p, n, false),
      (p) => `{"choices": [{"message": {"content": "${p(TOPICS)} is`,
    ],
    degenerate: [
      (p) =>
        `${p(WORDS)} and ${p(WORDS)} and ${p(WORDS)} and ${p(WORDS)} and ${p(WORDS)} and ${p(WORDS)} and`,
      (p) => `${p(TOPICS)} ${p(TOPICS)}, ${p(TOPICS)} ${p(TOPICS)} ${p(TOPICS)}`,
      () => `the the the the the the the`,
      (p) => `<|eot_id|> ${p(TOPICS)}`,
      (p) => `${p(WORDS)} ${p(WORDS)} ;; ${p(WORDS)}${p(WORDS)} ,, ;;`,
    ],
    'hallucination-marker': [
      (p) => `My training data only goes up to last year, so I can't say what ${p(TOPICS)} looks like today.`,
      (p) => `I cannot browse the internet, but I believe ${p(TOPICS)} was first described by ${p(NAMES)}.`,
      (p, n) =>
        `A ${n()} paper by ${p(NAMES)} (which I cannot verify) claims ${p(TOPICS)} doubles throughput.`,
      (p) => `As of my latest update, I don't have current information about ${p(TOPICS)}.`,
    ],
  },
};

/** Per label and split, how many fragments `anomalyCorpus` makes. */
export const CORPUS_SIZES: Record<CorpusSplit, number> = { train: 240, 'held-out': 60 };

/** The labelled fragments of one split, every label equally represented, in a seeded order. */
export function anomalyCorpus(split: CorpusSplit, seed = split === 'train' ? 1 : 2): LabelledFragment[] {
  let s = seed >>> 0 || 1;
  const rnd = () => {
    // xorshift32: deterministic across Node versions.
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
  const pick: Pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const number = () => Math.floor(rnd() * 5000);
  const out: LabelledFragment[] = [];
  for (const [label, templates] of Object.entries(TEMPLATES[split]) as [AnomalyLabel, Template[]][]) {
    for (let i = 0; i < CORPUS_SIZES[split]; i++)
      out.push({ label, text: templates[i % templates.length](pick, number) });
  }
  // Fisher-Yates with the same generator: training order matters to SGD.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
