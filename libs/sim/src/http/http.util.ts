import type { IncomingMessage, ServerResponse } from 'node:http';

/** OpenAI-style error: `{"error": {"message", "type", "param", "code"}}` with an HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
    /** Response headers the error carries (e.g. `retry-after` on a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): string {
    return JSON.stringify({
      error: { message: this.message, type: this.type, param: this.param, code: this.code },
    });
  }
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(
          new ApiError(
            413,
            `Request body exceeds ${MAX_BODY_BYTES} bytes.`,
            'invalid_request_error',
            null,
            'request_too_large',
          ),
        );
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const body = await readBody(req);
  if (body.length === 0)
    throw new ApiError(400, 'We could not parse the JSON body of your request: the body is empty.');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new ApiError(
      400,
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
    );
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, body: string, contentType: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendError(res: ServerResponse, error: ApiError, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, error.status, error.body(), { ...error.headers, ...headers });
}

/** Maps a zod error to a 400 naming the first bad parameter. */
export function zodToApiError(error: { issues: { path: PropertyKey[]; message: string }[] }): ApiError {
  const issue = error.issues[0];
  const param = issue?.path.map(String).join('.') || null;
  return new ApiError(
    400,
    param ? `Invalid value for '${param}': ${issue.message}` : (issue?.message ?? 'Invalid request.'),
    'invalid_request_error',
    param,
    'invalid_value',
  );
}

/**
 * Writes a response body, optionally trickled (`bytesPerSecond`, the slow_loris fault): the
 * bytes queue and drain every 100 ms. `end()` waits for the queue.
 */
export class BodyWriter {
  private queue = '';
  private ending = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly bytesPerSecond: number | null,
  ) {}

  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  write(text: string): void {
    if (this.closed) return;
    if (this.bytesPerSecond === null) {
      this.res.write(text);
      this.flush();
      return;
    }
    this.queue += text;
    this.pump();
  }

  end(): void {
    this.ending = true;
    if (this.bytesPerSecond === null || this.queue.length === 0) {
      if (!this.closed) this.res.end();
      return;
    }
    this.pump();
  }

  destroy(): void {
    if (this.timer) clearTimeout(this.timer);
    this.res.destroy();
  }

  /**
   * Hands what was written to the kernel now. Node's ServerResponse corks the socket on a chunked
   * write and uncorks it on the next tick, so every event written in one task (a decode step's
   * tokens for every running sequence) would leave together at the end of the task: later than
   * the ground truth's emit stamps, and unlike a real server that sends each chunk as it is made.
   */
  private flush(): void {
    const socket = this.res.socket;
    while (socket !== null && socket.writableCorked > 0) socket.uncork();
  }

  private pump(): void {
    if (this.timer !== null) return;
    const slice = Math.max(1, Math.floor((this.bytesPerSecond ?? 1) / 10));
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.closed) return;
      const part = this.queue.slice(0, slice);
      this.queue = this.queue.slice(slice);
      this.res.write(part);
      this.flush();
      if (this.queue.length > 0) this.pump();
      else if (this.ending) this.res.end();
    }, 100);
  }
}
