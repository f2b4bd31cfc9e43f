// autocannon in-process (same accounting of CPU as fathom-client.ts). Usage: node autocannon-client.js URL CONCURRENCY SECONDS [RATE]
// RATE: requests per second over all connections (autocannon's overallRate); none: as fast as it can.
'use strict';
const autocannon = require('autocannon');
const [url, concurrency, seconds, rate] = process.argv.slice(2);
const opts = { url: `${url}/v1/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hello' }], stream: false }), connections: Number(concurrency), ...(rate ? { overallRate: Number(rate) } : {}) };
autocannon({ ...opts, duration: 0.5 }, () => {
  const cpu = process.cpuUsage(); const t0 = performance.now();
  autocannon({ ...opts, duration: Number(seconds) }, (err, result) => {
    const used = process.cpuUsage(cpu);
    console.log(JSON.stringify({ tool: 'autocannon', requests: result.requests.total, errors: result.errors + result.non2xx, wallS: (performance.now() - t0) / 1000, cpuS: (used.user + used.system) / 1e6 }));
  });
});
