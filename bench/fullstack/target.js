// A minimal, fast OpenAI-compatible server for the full-stack bench (not Fathom's simulator): one
// Node process, pinned to its own core by bench.js.
//   GET  /v1/models                               -> one model, "bench"
//   POST /v1/chat/completions {"stream": false}   -> a small chat.completion JSON with usage
//   POST /v1/chat/completions {"stream": true}    -> TOKENS content chunks back to back, finish, usage, [DONE]
//   GET  /stats                                   -> what it served since the last reset: completions
//                                                    answered, and the first and last one's time (ms)
//   POST /stats/reset                             -> starts counting again
// The bench counts against these, the target's own figures, not only against what a client says.
// Usage: node target.js PORT [TOKENS=16] [BUSY_US=0]. Prints "target on PORT" when listening.
// BUSY_US: CPU the target spends on each completion before answering (a spin), to make it slower
// per request than a client: the bench's `--target-busy-us`.
'use strict';
const http = require('node:http');
const port = Number(process.argv[2] ?? 18600);
const tokens = Number(process.argv[3] ?? 16);
const busyUs = Number(process.argv[4] ?? 0);
const spin = () => {
  const until = performance.now() + busyUs / 1000;
  while (performance.now() < until);
};
const json = JSON.stringify({
  id: 'c1',
  object: 'chat.completion',
  model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello there' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
});
const models = JSON.stringify({ object: 'list', data: [{ id: 'bench', object: 'model' }] });
// " the" is one token in common tokenizers, so the usage below is what a client counts too.
const chunk = () =>
  `data: {"id":"c1","object":"chat.completion.chunk","model":"bench","choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]}\n\n`;
// One write for the whole stream body: the client, not the target's syscalls, should be what limits.
const stream =
  Array.from({ length: tokens }, chunk).join('') +
  `data: {"id":"c1","object":"chat.completion.chunk","model":"bench","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n` +
  `data: {"id":"c1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":${tokens},"total_tokens":${tokens + 5}}}\n\ndata: [DONE]\n\n`;
let served = { completions: 0, firstMs: null, lastMs: null };
http
  .createServer((req, res) => {
    if (req.url === '/stats' || req.url === '/stats/reset') {
      if (req.method === 'POST') served = { completions: 0, firstMs: null, lastMs: null };
      const text = JSON.stringify(served);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': text.length }).end(text);
      req.resume();
      return;
    }
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': models.length }).end(models);
      return;
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (busyUs > 0) spin();
      const now = performance.now();
      served.completions++;
      served.firstMs ??= now;
      served.lastMs = now;
      if (body.includes('"stream":true')) {
        res.writeHead(200, {
          'content-type': 'text/event-stream',
          'content-length': Buffer.byteLength(stream),
        });
        res.end(stream);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': json.length }).end(json);
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`target on ${port}`));
