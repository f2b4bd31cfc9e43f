import { Pool } from 'undici';
import { Http1Client } from './http1.client';

/**
 * The client a POST-only driver sends through: Fathom's own HTTP/1.1 client for `http:` origins
 * (one pre-serialised head, one socket write per request), undici for `https:` (the own client
 * speaks plain TCP only, and TLS costs dwarf the parsing there). Exactly one is non-null. The
 * engine's own timer (requestTimeoutMs) bounds each request, so neither runs timers of its own.
 */
export function postTransport(options: {
  origin: string;
  path: string;
  headers: Record<string, string>;
  connections: number;
}): { http1: Http1Client; pool: null } | { http1: null; pool: Pool } {
  const { origin, path, headers, connections } = options;
  if (new URL(origin).protocol === 'http:')
    return { http1: new Http1Client({ origin, method: 'POST', path, headers, connections }), pool: null };
  return {
    http1: null,
    pool: new Pool(origin, { connections, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 }),
  };
}
