import WebSocket from 'ws';
import { headerTexts, stepRoute, type WebSocketStep } from '@fathom/contracts';
import { classifyError, errorText, httpErrorClass } from '../error-class.util';
import { jsonPathValue } from './step-assertion.evaluator';
import { failedAnswer, type StepAnswer, type StepCallContext, type StepClient } from './step-client';

/** Reply frames kept for assertions up to this many characters (later frames are counted, not kept). */
const STEP_BODY_CAP = 1024 * 1024;
/** Largest frame accepted (ws's default is 100 MiB); a bigger one is a `protocol` failure. */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/**
 * One WebSocket exchange per run: a connection of its own (a user's session), the step's frames
 * sent once it opens, frames read until `until` says the reply is complete, then closed. Timing:
 * the first frame is the first message (TTFT-like), the last one the end. Classes: refused or
 * unreachable: `connect`; an upgrade answered with an HTTP error: its status class (a status
 * assertion may expect it); a broken frame (bad opcode, invalid UTF-8, oversized): `protocol`; a
 * frame a JSON predicate cannot read: `malformed-json`; closed before the reply was complete:
 * `stream-truncated`; no reply in time: the engine's `timeout`.
 */
export class WebSocketStepClient implements StepClient {
  readonly route: string;
  private readonly url: string;
  private readonly frames: string[];
  private readonly headers: Record<string, string>;

  constructor(
    private readonly step: WebSocketStep,
    baseUrl: string,
    auth: Record<string, string>,
  ) {
    this.route = stepRoute(step);
    if (step.url.startsWith('/')) {
      const origin = new URL(baseUrl);
      this.url = `${origin.protocol === 'https:' ? 'wss:' : 'ws:'}//${origin.host}${step.url}`;
    } else this.url = step.url;
    this.frames = step.send.map((m) => (typeof m === 'string' ? m : JSON.stringify(m)));
    this.headers = { ...auth, ...headerTexts(step.headers) };
  }

  call({ request }: StepCallContext, startedMono: number): Promise<StepAnswer> {
    if (request.cancel.aborted)
      return Promise.resolve(
        failedAnswer(
          classifyError(request.cancel.reason, request.cancel, false),
          errorText(request.cancel.reason),
        ),
      );
    return new Promise<StepAnswer>((resolve) => {
      const offsets: number[] = [];
      const kept: string[] = [];
      let keptChars = 0;
      let opened = false;
      let settled = false;
      let socket: WebSocket;
      const received = () => ({
        httpStatus: opened ? 101 : 0,
        firstMessageMs: offsets[0] ?? null,
        messageOffsetsMs: offsets,
        messages: offsets.length,
      });
      const finish = (answer: StepAnswer) => {
        if (settled) return;
        settled = true;
        if (socket.readyState === WebSocket.OPEN) socket.close(1000);
        else socket.terminate();
        resolve(answer);
      };
      const fail = (errorClass: StepAnswer['statusClass'] & string, message: string) =>
        finish({ ...failedAnswer(errorClass, message), ...received() });
      try {
        socket = new WebSocket(this.url, {
          headers: { ...this.headers, ...request.headers },
          perMessageDeflate: false,
          maxPayload: MAX_FRAME_BYTES,
        });
      } catch (error) {
        resolve(failedAnswer('other', errorText(error)));
        return;
      }
      socket.on('open', () => {
        opened = true;
        for (const frame of this.frames) socket.send(frame);
      });
      socket.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
        if (settled) return;
        offsets.push(performance.now() - startedMono);
        const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
        const text = isBinary ? buffer.toString('base64') : buffer.toString('utf8');
        if (keptChars + text.length <= STEP_BODY_CAP) {
          kept.push(text);
          keptChars += text.length;
        }
        const until = this.step.until;
        if ('frames' in until) {
          if (offsets.length >= until.frames) finish(this.answer(kept, received()));
          return;
        }
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          fail('malformed-json', `frame ${offsets.length} is not JSON: ${text.slice(0, 200)}`);
          return;
        }
        const found = jsonPathValue(value, until.path);
        if (until.equals === undefined ? found !== undefined : found === until.equals)
          finish(this.answer(kept, received()));
      });
      socket.on('error', (error: Error & { code?: string }) => {
        const refused = /^Unexpected server response: (\d+)$/.exec(error.message);
        if (refused) {
          const status = Number(refused[1]);
          const statusClass = httpErrorClass(status) ?? 'protocol';
          finish({
            status,
            httpStatus: status,
            body: '',
            firstMessageMs: null,
            messageOffsetsMs: [],
            messages: 0,
            statusClass,
            statusText: `WebSocket upgrade answered HTTP ${status}`,
          });
          return;
        }
        if (error.code?.startsWith('WS_ERR_')) fail('protocol', errorText(error));
        else fail(classifyError(error, request.cancel, opened), errorText(error));
      });
      socket.on('close', (code: number, reason: Buffer) => {
        if (!opened) fail('connect', `closed before the upgrade (code ${code})`);
        else
          fail(
            'stream-truncated',
            `closed by the server (code ${code}${reason.length ? `: ${reason.toString('utf8').slice(0, 200)}` : ''}) after ${offsets.length} frame(s), before the reply was complete`,
          );
      });
      request.cancel
        .signal()
        .addEventListener('abort', () =>
          fail(
            classifyError(request.cancel.reason, request.cancel, opened),
            errorText(request.cancel.reason),
          ),
        );
    });
  }

  private answer(kept: string[], received: Omit<StepAnswer, 'status' | 'body' | 'statusClass'>): StepAnswer {
    const body =
      kept.length === 1
        ? kept[0]
        : JSON.stringify(
            kept.map((text) => {
              try {
                return JSON.parse(text) as unknown;
              } catch {
                return text;
              }
            }),
          );
    return { ...received, status: 101, body, statusClass: null };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
