import type { RequestRecord, ToolCallObservation } from '@fathom/contracts';
import type { DriverOutcome, WindowSnapshot } from '@fathom/load';
import { ToolCallJoinSink } from './tool-call-join.sink';

const record = (requestId: string) => ({ requestId }) as RequestRecord;
const call: ToolCallObservation = { tool: 't', version: 'v1', status: 200, body: 'empty' };
const outcome = (toolCalls?: ToolCallObservation[]) => ({ toolCalls }) as DriverOutcome;

describe(ToolCallJoinSink.name, () => {
  it("puts the outcome's tool calls on the record just built for the same request", () => {
    const out: RequestRecord[] = [];
    const sut = new ToolCallJoinSink({ record: (r) => out.push(r), window: () => undefined });
    sut.record(record('a'));
    expect(out).toEqual([]);
    sut.tap('a', outcome([call]));
    sut.tap('b', outcome([call])); // not sampled: no record, nothing to join
    expect(out).toEqual([{ requestId: 'a', toolCalls: [call] }]);
  });

  it('never loses a record: a held one is released unchanged by the next record, a window or flush', () => {
    const out: unknown[] = [];
    const sut = new ToolCallJoinSink({ record: (r) => out.push(r), window: (w) => out.push(w) });
    sut.record(record('a'));
    sut.record(record('b'));
    sut.window({ seq: 0 } as WindowSnapshot);
    sut.record(record('c'));
    sut.tap('x', outcome([call]));
    sut.flush();
    expect(out).toEqual([{ requestId: 'a' }, { requestId: 'b' }, { seq: 0 }, { requestId: 'c' }]);
  });
});
