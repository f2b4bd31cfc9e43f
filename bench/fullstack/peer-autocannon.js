// The non-streamed peer: autocannon, same body and concurrency as Fathom's campaign.
// Usage: node peer-autocannon.js URL CONCURRENCY SECONDS [dyed]. Prints one JSON line.
// dyed: also the headers Fathom adds to each request (its accept header and traffic dyeing:
// traceparent, x-fathom-run, x-fathom-request), at the lengths Fathom's have; autocannon sends
// the same values every time (a constant request), Fathom new ids per request.
// Throughput is over autocannon's own measured duration, not the one asked for: autocannon stops
// at the first 1 s sample tick after its stop timer, and when that tick wins the race with the
// timer a 10 s run goes on for 11 s (seen here: 611,635 requests in 11.02 s), so dividing by the
// asked-for seconds overstated the peer by up to 10 %.
'use strict';
const autocannon = require('autocannon');
const [url, concurrency, seconds, variant] = process.argv.slice(2);
const runId = '8951257f-b8db-4783-b1ef-2e871da51cdb';
const dyeing = {
  accept: 'application/json',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-0000000000000123-01',
  'x-fathom-run': runId,
  'x-fathom-request': `${runId}-0-123456`,
};
// autocannon's own histogram keeps whole milliseconds; its 'response' event has the float time.
const times = [];
const instance = autocannon(
  {
    url: `${url}/chat/completions`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(variant === 'dyed' ? dyeing : {}) },
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
        tool: variant === 'dyed' ? 'autocannon-dyed' : 'autocannon',
        requests: r.requests.total,
        errors: r.errors + r.non2xx,
        requestsPerSec: r.requests.total / r.duration,
        seconds: r.duration,
        p50Ms: times.sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? null,
      }),
    );
  },
);
instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  if (statusCode === 200) times.push(responseTime);
});
