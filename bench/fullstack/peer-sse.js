// The streamed peer: a bare undici reader that sends the same request and reads each SSE stream
// to its end, timing it (no parsing beyond finding the end). Usage: node peer-sse.js URL CONCURRENCY SECONDS
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
      for await (const chunk of res) void chunk;
      latencies.push(performance.now() - t0);
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
      tool: 'undici-sse',
      requests: latencies.length,
      errors,
      requestsPerSec: latencies.length / wallS,
      p50Ms: latencies[Math.floor(latencies.length / 2)] ?? null,
    }),
  );
  await pool.close();
});
