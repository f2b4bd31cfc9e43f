// Parse time per non-streamed chat.completion body on one core: JSON.parse against the shared
// CompletionBodyTemplate, and ChatStreamAssembler accept + result without and with it.
// `node bench/completion-body.bench.js [BODIES=100000] [ROUNDS=3]`. Prints figures; never a test.
'use strict';
const path = require('path');
require('./ts-register');
const { ChatStreamAssembler, CompletionBodyTemplate } = require(
  path.join(__dirname, '..', 'libs/semantic/src/index.ts'),
);

const n = Number(process.argv[2] ?? 100000);
const rounds = Number(process.argv[3] ?? 3);
if (!Number.isInteger(n) || n < 1 || !Number.isInteger(rounds) || rounds < 1)
  throw new Error('usage: completion-body.bench.js [BODIES>=1] [ROUNDS>=1]');

// The load-engine and full-stack bench targets' body (bench/load-engine/target.js).
const benchTarget = () =>
  '{"id":"c1","object":"chat.completion","model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}';
// vLLM 0.9-style body: ids, time, text and counts vary per response.
const vllm = (i) =>
  `{"id":"chatcmpl-${(1e9 + i).toString(16)}a7c1e2d3","object":"chat.completion","created":${1764650000 + (i >> 6)},"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris. It is known for the Eiffel Tower ${i}.","refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"service_tier":null,"system_fingerprint":null,"usage":{"prompt_tokens":${20 + (i & 7)},"total_tokens":${40 + (i & 7)},"completion_tokens":20,"prompt_tokens_details":null},"prompt_logprobs":null,"kv_transfer_params":null}`;
// The same with escapes in the text (newlines, quotes): read by JSON.parse of that string alone.
const vllmEscaped = (i) => vllm(i).replace('Paris.', 'Paris.\\n\\n\\"Yes\\"');
// A 2,000-character answer.
const vllmLong = (i) => vllm(i).replace('Paris.', 'Paris. '.repeat(285));

const time = (fn) => {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / n;
};
for (const [name, make] of [
  ['bench target', benchTarget],
  ['vLLM', vllm],
  ['vLLM, escapes', vllmEscaped],
  ['vLLM, 2 KB text', vllmLong],
]) {
  // Flat strings, as Buffer#toString gives them to the driver.
  const bodies = Array.from({ length: 1024 }, (_, i) => Buffer.from(make(i)).toString('utf8'));
  for (let round = 1; round <= rounds; round++) {
    let sink = 0;
    const parse = time(() => {
      for (let i = 0; i < n; i++) sink += JSON.parse(bodies[i & 1023]).choices.length;
    });
    const template = new CompletionBodyTemplate();
    template.match(bodies[0]);
    template.learn(bodies[0], JSON.parse(bodies[0]));
    const match = time(() => {
      for (let i = 0; i < n; i++) sink += template.match(bodies[i & 1023]).choices.length;
    });
    const plain = time(() => {
      for (let i = 0; i < n; i++) {
        const a = new ChatStreamAssembler();
        a.accept(bodies[i & 1023]);
        sink += a.result().tokens;
      }
    });
    const shared = new CompletionBodyTemplate();
    const fast = time(() => {
      for (let i = 0; i < n; i++) {
        const a = new ChatStreamAssembler({ bodyTemplate: shared });
        a.accept(bodies[i & 1023]);
        sink += a.result().tokens;
      }
    });
    if (sink === 0) throw new Error('nothing parsed');
    console.log(
      `${name} (${bodies[0].length} chars), round ${round}, ns per body: JSON.parse ${parse.toFixed(0)}, template match ${match.toFixed(0)} (x${(match / parse).toFixed(2)}); assembler accept+result ${plain.toFixed(0)} -> ${fast.toFixed(0)} with the template (-${(plain - fast).toFixed(0)})`,
    );
  }
}
