#!/usr/bin/env node
// Container health probe: `node deploy/docker/healthcheck.js [/path]` GETs
// http://127.0.0.1:$PORT/path (default /health) and exits 0 on a 2xx, 1 otherwise.
// The runtime image is node:20-bookworm-slim, which has neither curl nor wget.
'use strict';
const path = process.argv[2] ?? '/health';
const port = process.env.PORT ?? '7070';
fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(4000) })
  .then((response) => process.exit(response.ok ? 0 : 1))
  .catch(() => process.exit(1));
