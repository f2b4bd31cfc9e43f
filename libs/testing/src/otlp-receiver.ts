import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One OTLP attribute as the JSON encoding carries it. */
export interface OtlpAttribute {
  key: string;
  value: {
    stringValue?: string;
    intValue?: string | number;
    doubleValue?: number;
    boolValue?: boolean;
    arrayValue?: { values: Array<{ stringValue?: string }> };
  };
}

export interface OtlpHistogramPoint {
  attributes: OtlpAttribute[];
  count: string | number;
  sum: number;
  bucketCounts: Array<string | number>;
  explicitBounds: number[];
}

export interface OtlpMetric {
  name: string;
  unit: string;
  histogram?: { dataPoints: OtlpHistogramPoint[] };
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status: { code?: number; message?: string };
}

/** Attributes as a plain object (ints as numbers, arrays of strings as arrays). */
export function otlpAttributes(list: readonly OtlpAttribute[]): Record<string, unknown> {
  return Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ??
        (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
        value.doubleValue ??
        value.boolValue ??
        value.arrayValue?.values.map((v) => v.stringValue),
    ]),
  );
}

/**
 * An OTLP/HTTP receiver on loopback for tests: keeps what exporters post to /v1/metrics and
 * /v1/traces, decoded from JSON (the `-otlp-http` exporters' encoding), and answers 200.
 */
export class OtlpReceiver {
  readonly posts: Array<{ path: string; body: unknown }> = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const json = String(req.headers['content-type']).includes('json');
        this.posts.push({ path: req.url ?? '', body: json ? JSON.parse(text) : text });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  /** Every metric received, by scope name (e.g. `fathom.genai-client`). */
  metrics(scope?: string): OtlpMetric[] {
    type Body = {
      resourceMetrics: Array<{ scopeMetrics: Array<{ scope: { name: string }; metrics: OtlpMetric[] }> }>;
    };
    return this.posts
      .filter((p) => p.path === '/v1/metrics')
      .flatMap((p) => (p.body as Body).resourceMetrics)
      .flatMap((r) =>
        r.scopeMetrics.filter((s) => !scope || s.scope.name === scope).flatMap((s) => s.metrics),
      );
  }

  /** Every span received, by scope name. */
  spans(scope?: string): OtlpSpan[] {
    type Body = {
      resourceSpans: Array<{ scopeSpans: Array<{ scope: { name: string }; spans: OtlpSpan[] }> }>;
    };
    return this.posts
      .filter((p) => p.path === '/v1/traces')
      .flatMap((p) => (p.body as Body).resourceSpans)
      .flatMap((r) => r.scopeSpans.filter((s) => !scope || s.scope.name === scope).flatMap((s) => s.spans));
  }

  close(): Promise<void> {
    const server = this.server;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}
