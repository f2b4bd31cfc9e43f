import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP proxy in front of a target that records when each request arrived and how
 * many are open (arrived, response not finished, client still connected): the ground truth
 * for "the load stopped". A client that goes away closes the upstream request too.
 */
export interface CountingProxy {
  url: string;
  arrivals: number[];
  open(): number;
  close(): Promise<void>;
}

export async function startCountingProxy(targetUrl: string): Promise<CountingProxy> {
  const target = new URL(targetUrl);
  const arrivals: number[] = [];
  let open = 0;
  const server: Server = createServer((req, res) => {
    arrivals.push(Date.now());
    open++;
    let counted = true;
    const done = () => {
      if (counted) open--;
      counted = false;
    };
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (response) => {
        res.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(res);
      },
    );
    upstream.on('error', () => {
      done();
      res.destroy();
    });
    res.on('finish', done);
    res.on('close', () => {
      done();
      upstream.destroy();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    open: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
