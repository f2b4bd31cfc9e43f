// The loopback target of the load-engine bench: one Node process (pin it with taskset).
//   POST /v1/chat/completions {"stream": false} -> a small chat.completion JSON
//   POST /v1/chat/completions {"stream": true}  -> TOKENS content chunks, GAP_MS apart (0: back to back), usage, [DONE]
// Usage: node target.js PORT [TOKENS=64] [GAP_MS=1]
'use strict';
const http = require('node:http');
const port = Number(process.argv[2] ?? 8089);
const tokens = Number(process.argv[3] ?? 64);
const gapMs = Number(process.argv[4] ?? 1);
const json = JSON.stringify({
  id: 'c1', object: 'chat.completion', model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello there' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
});
const chunks = Array.from({ length: tokens }, (_, i) =>
  `data: {"id":"c1","object":"chat.completion.chunk","model":"bench","choices":[{"index":0,"delta":{"content":" w${i}"},"finish_reason":null}]}\n\n`);
const tail = `data: {"id":"c1","object":"chat.completion.chunk","model":"bench","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n` +
  `data: {"id":"c1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":${tokens},"total_tokens":${tokens + 5}}}\n\ndata: [DONE]\n\n`;
http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    if (!body.includes('"stream":true')) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) }).end(json);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const next = () => {
      if (res.destroyed) return;
      if (i === tokens) return void res.end(tail);
      res.write(chunks[i++]);
      if (gapMs > 0) setTimeout(next, gapMs);
      else setImmediate(next);
    };
    next();
  });
}).listen(port, '127.0.0.1', () => console.log(`target on ${port}`));
