// Baseline: a bare undici client reading the same SSE streams with no accounting beyond counting
// `data:` events. Usage: node undici-stream-client.js URL CONCURRENCY SECONDS
'use strict';
const { Pool } = require('undici');
const [url, concurrency, seconds] = process.argv.slice(2);
const pool = new Pool(url, { connections: Number(concurrency) });
const body = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hello' }], stream: true, max_tokens: 64 });
let requests = 0, events = 0, stop = false;
async function user() {
  while (!stop) {
    const { body: res } = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body });
    for await (const chunk of res) { const s = chunk.toString(); for (let i = s.indexOf('data:'); i !== -1; i = s.indexOf('data:', i + 5)) events++; }
    requests++;
  }
}
const cpu = process.cpuUsage(); const t0 = performance.now();
setTimeout(() => (stop = true), Number(seconds) * 1000);
Promise.all(Array.from({ length: Number(concurrency) }, user)).then(() => {
  const used = process.cpuUsage(cpu);
  console.log(JSON.stringify({ tool: 'undici-bare', requests, tokenEvents: events, wallS: (performance.now() - t0) / 1000, cpuS: (used.user + used.system) / 1e6 }));
  return pool.close();
});
