// The streamed peer that reads like a serving benchmark: the same undici request as peer-sse.js,
// but each SSE event is split out and its JSON parsed, and each content token timestamped (TTFT
// and inter-token gaps), as vLLM's benchmark_serving and GuideLLM do per stream.
// Usage: node peer-sse-parse.js URL CONCURRENCY SECONDS
'use strict';
const { Pool } = require('undici');
const [url, concurrency, seconds] = process.argv.slice(2);
const origin = new URL(url);
const pool = new Pool(origin.origin, { connections: Number(concurrency) });
const body = JSON.stringify({
  model: 'bench',
  messages: [{ role: 'user', content: 'hello' }],
  stream: true,
  max_tokens: 16,
});
const latencies = [];
let stop = false;
let errors = 0;
let tokens = 0;
async function user() {
  while (!stop) {
    const t0 = performance.now();
    try {
      const { body: res } = await pool.request({
        path: `${origin.pathname}/chat/completions`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      res.setEncoding('utf8');
      let buffer = '';
      let text = '';
      const stamps = [];
      for await (const chunk of res) {
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!event.startsWith('data: ')) continue;
          const data = event.slice(6);
          if (data === '[DONE]') continue;
          const delta = JSON.parse(data).choices?.[0]?.delta?.content;
          if (delta) {
            text += delta;
            stamps.push(performance.now() - t0);
          }
        }
      }
      tokens += stamps.length;
      latencies.push(performance.now() - t0);
      void text;
    } catch {
      errors++;
    }
  }
}
const t0 = performance.now();
setTimeout(() => (stop = true), Number(seconds) * 1000);
Promise.all(Array.from({ length: Number(concurrency) }, user)).then(async () => {
  const wallS = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      tool: 'undici-sse-parse',
      requests: latencies.length,
      errors,
      tokens,
      requestsPerSec: latencies.length / wallS,
      p50Ms: latencies[Math.floor(latencies.length / 2)] ?? null,
    }),
  );
  await pool.close();
});
