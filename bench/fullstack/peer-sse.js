// The streamed peers: an undici reader that sends the same request and reads each SSE stream to
// its end, timing it. `bare` finds only the end; `parse` also splits out each SSE event, parses
// its JSON and stamps each content token (TTFT and inter-token gaps), as vLLM's benchmark_serving
// and GuideLLM do per stream.
// Usage: node peer-sse.js URL CONCURRENCY SECONDS [bare|parse]
'use strict';
const { Pool } = require('undici');
const [url, concurrency, seconds, mode = 'bare'] = process.argv.slice(2);
const parse = mode === 'parse';
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

/** Reads one stream's events, parsing each and stamping each content token. */
async function readParsed(res, t0) {
  res.setEncoding('utf8');
  let buffer = '';
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
      if (JSON.parse(data).choices?.[0]?.delta?.content) stamps.push(performance.now() - t0);
    }
  }
  tokens += stamps.length;
}

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
      if (parse) await readParsed(res, t0);
      else for await (const chunk of res) void chunk;
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
      tool: parse ? 'undici-sse-parse' : 'undici-sse',
      requests: latencies.length,
      errors,
      ...(parse ? { tokens } : {}),
      requestsPerSec: latencies.length / wallS,
      p50Ms: latencies[Math.floor(latencies.length / 2)] ?? null,
    }),
  );
  await pool.close();
});
