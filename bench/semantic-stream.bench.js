// Stream parser and entropy throughput on one core: `node bench/semantic-stream.bench.js`. Prints figures; never a test.
'use strict';
const path = require('path');
const root = path.join(__dirname, '..');
require('./ts-register');
const { SseDecoder, ChatStreamAssembler, assessHallucinationRisk } = require(path.join(root,'libs/semantic/src/index.ts'));
const chunk = (i) => `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"tok${i}"},"logprobs":{"content":[{"token":"tok${i}","logprob":-0.5,"bytes":[1],"top_logprobs":[${Array.from({length:5},(_,k)=>`{"token":"a${k}","logprob":${-0.5-k},"bytes":null}`).join(',')}]}]},"finish_reason":null}]}\n\n`;
const text = Array.from({length:1000}, (_, i) => chunk(i)).join('');
let t = process.hrtime.bigint(); let tokens = 0; let lps;
for (let r = 0; r < 50; r++) { const d = new SseDecoder(); const a = new ChatStreamAssembler(); for (let o = 0; o < text.length; o += 300) for (const p of d.push(text.slice(o, o+300))) tokens += a.accept(p).tokens; for (const p of d.end()) a.accept(p); lps = a.result().logprobs; }
let s = Number(process.hrtime.bigint() - t)/1e9; console.log('parse tokens/s (top-5 logprobs, 300-char chunks):', Math.round(tokens/s), 'MB/s', (text.length*50/s/1e6).toFixed(1));
t = process.hrtime.bigint(); for (let r = 0; r < 200; r++) assessHallucinationRisk(lps); s = Number(process.hrtime.bigint() - t)/1e9; console.log('entropy+risk tokens/s:', Math.round(200*lps.length/s));
