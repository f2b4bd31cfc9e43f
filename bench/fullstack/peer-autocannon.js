// The non-streamed peer: autocannon, same body and concurrency as Fathom's campaign.
// Usage: node peer-autocannon.js URL CONCURRENCY SECONDS. Prints one JSON line.
'use strict';
const autocannon = require('autocannon');
const [url, concurrency, seconds] = process.argv.slice(2);
// autocannon's own histogram keeps whole milliseconds; its 'response' event has the float time.
const times = [];
const instance = autocannon(
  {
    url: `${url}/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'bench',
      messages: [{ role: 'user', content: 'hello' }],
      stream: false,
      max_tokens: 16,
    }),
    connections: Number(concurrency),
    duration: Number(seconds),
  },
  (err, r) => {
    if (err) throw err;
    console.log(
      JSON.stringify({
        tool: 'autocannon',
        requests: r.requests.total,
        errors: r.errors + r.non2xx,
        requestsPerSec: r.requests.total / Number(seconds),
        p50Ms: times.sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? null,
      }),
    );
  },
);
instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  if (statusCode === 200) times.push(responseTime);
});
