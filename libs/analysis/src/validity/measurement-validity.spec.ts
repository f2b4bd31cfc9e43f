import type { TelemetryWindow } from '@fathom/contracts';
import type { RecordDigest } from '../evidence/record-digest';
import { assessValidity } from './measurement-validity';

const window = (i: number, requests: number, extra: Partial<TelemetryWindow> = {}) =>
  ({ windowStart: i * 1000, windowMs: 1000, requests, late: 0, dropped: 0, ...extra }) as TelemetryWindow;
const digest = (mismatch: number | null): RecordDigest =>
  ({ ok: true, tokenMismatch: mismatch, outputTokens: 32 }) as RecordDigest;

describe(assessValidity.name, () => {
  const steady = [0, 1, 2, 3, 4, 5].map((i) => window(i, 20));

  it('accepts a steady run whose counts agree', () => {
    expect(assessValidity(steady, [digest(0), digest(1)], false)).toEqual({ valid: true, reasons: [] });
  });

  it('flags a generator that fell behind its schedule', () => {
    const sut = assessValidity([...steady, window(6, 20, { late: 10, dropped: 5 })], [], false);
    expect(sut.reasons.map((r) => r.kind)).toEqual(['generator-bottleneck']);
  });

  it('flags token counts that disagree beyond the bound', () => {
    const sut = assessValidity(steady, [digest(0), digest(9)], false);
    expect(sut.reasons[0]).toMatchObject({
      kind: 'token-count-mismatch',
      figures: { disagree: 1, counted: 2 },
    });
  });

  it('sums the shards of each second: uneven but steady shards are a steady run', () => {
    // Two shards that started 137 ms apart, one at 80 req/s and one at 10, each as steady as can be.
    const shard = (index: number, offsetMs: number, requests: number) =>
      [0, 1, 2, 3, 4, 5].map((i) =>
        window(i, requests, {
          generatorId: 'g',
          shard: index,
          windowStart: offsetMs + i * 1000,
          gridMs: 1000,
        }),
      );
    const sut = assessValidity([...shard(0, 0, 80), ...shard(1, 137.4, 10)], [], false);
    expect(sut).toEqual({ valid: true, reasons: [] });
    // The same shards, one of them stalling every other second: unsteady.
    const stalling = shard(1, 137.4, 10).map((w, i) => ({ ...w, requests: i % 2 ? 0 : 160 }));
    const unsteady = assessValidity([...shard(0, 0, 0), ...stalling], [], false);
    expect(unsteady.reasons.map((r) => r.kind)).toEqual(['no-steady-state']);
  });

  it('flags an unsteady run unless a root cause explains it', () => {
    const unsteady = [0, 1, 2, 3, 4, 5].map((i) => window(i, i % 2 ? 2 : 40));
    expect(assessValidity(unsteady, [], false).reasons.map((r) => r.kind)).toEqual(['no-steady-state']);
    expect(assessValidity(unsteady, [], true).valid).toBe(true);
    expect(assessValidity(steady.slice(0, 3), [], false).reasons[0].detail).toContain('too short');
  });

  it('says no load was measured, not that the run was short, when there is no window at all', () => {
    const sut = assessValidity([], [], false);
    expect(sut.reasons).toEqual([
      {
        kind: 'no-steady-state',
        detail: 'no telemetry window at all: no load was measured',
        figures: { windows: 0 },
      },
    ]);
  });
});
