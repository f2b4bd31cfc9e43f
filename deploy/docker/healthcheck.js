#!/usr/bin/env node
// Container health probe: `node deploy/docker/healthcheck.js [/path] [port]` GETs
// http://127.0.0.1:<port>/path (path default /health, port default $PORT, else 7070) and exits 0
// on a 2xx, 1 otherwise. The shadow gateway passes its admin port (its own port is the primary's).
// The runtime image is node:20-bookworm-slim, which has neither curl nor wget.
'use strict';
const path = process.argv[2] ?? '/health';
const port = process.argv[3] ?? process.env.PORT ?? '7070';
fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(4000) })
  .then((response) => process.exit(response.ok ? 0 : 1))
  .catch(() => process.exit(1));
