import { envelope, type GeneratorHealth, type TelemetryWindow } from '@fathom/contracts';
import { mergeWindows } from '@fathom/load';
import type { TrackedCause } from '../root-cause/root-cause.engine';
import { assessGenerator, judgeClientBound, rootCausesOfRun } from './client-bound';
import { assessValidity } from './measurement-validity';

const idle: GeneratorHealth = {
  loopDelayP99Ms: 2,
  loopDelayMaxMs: 4,
  loopUtilization: 0.3,
  cpuBusy: 0.4,
  sendLateP99Ms: 0,
  inFlightMax: 16,
  concurrency: 16,
  e2eP50Ms: 0.4,
  recordBudgetPerSec: 100,
};
const saturated: GeneratorHealth = { ...idle, loopUtilization: 0.99, cpuBusy: 1 };

function windowsWith(health: GeneratorHealth[]): TelemetryWindow[] {
  const empty = mergeWindows([]).histogramsUs;
  return health.map((h, seq) => ({
    ...envelope('c', 'r', 1000 * (seq + 1)),
    generatorId: 'g',
    shard: 0,
    windowStart: 1000 * seq,
    windowMs: 1000,
    seq,
    requests: 3000,
    errors: 0,
    errorClasses: {},
    dropped: 0,
    late: 0,
    inputTokens: 0,
    outputTokens: 0,
    histogramsUs: empty,
    health: h,
  }));
}

const kvPressure = { kind: 'kv-cache-pressure', confidence: 0.8 } as TrackedCause;

describe(rootCausesOfRun.name, () => {
  it('names client-bound alone, first, when the client limited the run', () => {
    const sut = rootCausesOfRun(windowsWith([idle, saturated, saturated, saturated, idle]), [kvPressure]);
    expect(sut.map((c) => c.kind)).toEqual(['client-bound']);
    expect(sut[0].figures).toMatchObject({ windows: 3, boundWindows: 3 });
    expect(sut[0].advice).toContain('lower load.recordsPerSecond');
  });

  it('keeps the target causes when the client had room', () => {
    const sut = rootCausesOfRun(windowsWith([idle, idle, saturated, idle, idle]), [kvPressure]);
    expect(sut.map((c) => c.kind)).toEqual(['kv-cache-pressure']);
  });
});

describe(judgeClientBound.name, () => {
  it('judges a client-bound day of two shards (172,800 windows) at once', () => {
    // Each window was copied into its shard's list anew (quadratic), and Math.max(...windows)
    // threw RangeError past ~125,000 of them.
    const day = windowsWith(Array.from({ length: 86_400 }, () => saturated));
    const both = [...day, ...day.map((w) => ({ ...w, shard: 1 }))];
    const sut = judgeClientBound(both);
    expect(sut).toMatchObject({ windows: 172_796, boundWindows: 172_796, since: 1000, until: 86_399_000 });
  });

  it('weighs loop delay against what the window measured: 60 ms distorts 1 ms answers, not 2 s ones', () => {
    const delayed = (e2eP50Ms: number) => ({ ...idle, loopDelayP99Ms: 60, e2eP50Ms });
    expect(judgeClientBound(windowsWith([1, 1, 1, 1, 1].map(() => delayed(1))))).not.toBeNull();
    expect(judgeClientBound(windowsWith([1, 1, 1, 1, 1].map(() => delayed(2000))))).toBeNull();
  });

  it('judges a run whose engine waited for its core, weighed against what the window measured', () => {
    // A neighbour on the engine's core: the loop idles (no busy, no loop delay), but each
    // wake-up waits for the core before it can stamp a response.
    const waiting = (e2eP50Ms: number, coreWaitShare = 0.45) => ({
      ...idle,
      coreWaitShare,
      coreWaitMeanMs: 0.06,
      e2eP50Ms,
    });
    const sut = judgeClientBound(windowsWith([1, 1, 1, 1, 1].map(() => waiting(0.2))));
    expect(sut).toMatchObject({ windows: 3, boundWindows: 3 });
    expect(sut!.detail).toContain(
      '0 with its engine thread >= 95 % busy, 0 with it on its core or waiting for it >= 95 % of the window, ' +
        '0 with event-loop delay P99 >= 50 ms and half the E2E P50, ' +
        '3 with its engine thread waiting for its core >= 25 % of the window; median busy 30 %, ' +
        'loop delay P99 up to 2.0 ms, median core wait 45 %',
    );
    expect(sut!.figures.coreWaitShareMedian).toBeCloseTo(0.45);
    // 60 us waits do not move 50 ms answers; a 7 % wait share (Fathom's own services beside
    // the engine on one core, measured) is not judged either.
    expect(judgeClientBound(windowsWith([1, 1, 1, 1, 1].map(() => waiting(50))))).toBeNull();
    expect(judgeClientBound(windowsWith([1, 1, 1, 1, 1].map(() => waiting(0.2, 0.07))))).toBeNull();
    // Without the figures (not Linux) the detail leaves them out.
    expect(judgeClientBound(windowsWith([saturated, saturated, saturated]))!.detail).not.toContain(
      'core wait',
    );
  });

  it('judges a run whose engine thread was hardly ever idle: on its core or waiting for it', () => {
    // Seen on a streamed run at 0.34x a bare reader's rate: the loop said 88 % busy (a stream's
    // bytes that arrived while a neighbour held the core count as idle), the thread waited 15 %.
    const never = (coreRunShare: number, coreWaitShare: number) => ({
      ...idle,
      loopUtilization: 0.88,
      coreRunShare,
      coreWaitShare,
      coreWaitMeanMs: 0.01,
      e2eP50Ms: 0.1,
    });
    const sut = judgeClientBound(windowsWith([1, 1, 1, 1, 1].map(() => never(0.82, 0.15))));
    expect(sut).toMatchObject({ windows: 3, boundWindows: 3 });
    expect(sut!.detail).toContain('3 with it on its core or waiting for it >= 95 % of the window');
    expect(sut!.detail).toContain('median core wait 15 %, median time on its core 82 %');
    expect(sut!.figures.coreRunShareMedian).toBeCloseTo(0.82);
    // Idle a tenth of the window (waiting on the target): not judged.
    expect(judgeClientBound(windowsWith([1, 1, 1, 1, 1].map(() => never(0.75, 0.15))))).toBeNull();
    expect(assessGenerator(windowsWith([1, 1, 1, 1, 1].map(() => never(0.75, 0.15)))).health).toMatchObject({
      coreRunShareMedian: 0.75,
      coreWaitShareMedian: 0.15,
    });
  });

  it('leaves out each shard’s first and last window and windows without health', () => {
    const windows = windowsWith([saturated, idle, idle, idle, saturated]);
    expect(judgeClientBound(windows)).toBeNull();
    expect(judgeClientBound(windows.map(({ health: _, ...w }) => w))).toBeNull();
    expect(judgeClientBound(windowsWith([saturated, saturated]))).toBeNull();
  });
});

describe(assessGenerator.name, () => {
  it('gives the judged windows’ medians on a valid run too, and nothing without health', () => {
    const health = [0.2, 0.3, 0.5, 0.4, 0.9].map((u, i) => ({
      ...idle,
      loopUtilization: u,
      loopDelayP99Ms: 2 + i,
      coreWaitShare: u / 10,
      coreWaitMeanMs: 0.01,
    }));
    const windows = windowsWith(health);
    const expected = {
      windows: 3,
      loopUtilizationMedian: 0.4,
      loopDelayP99MaxMs: 5,
      coreWaitShareMedian: 0.04,
    };
    expect(assessGenerator(windows).health).toEqual(expected);
    const validity = assessValidity(windows, [], false);
    expect(validity).toMatchObject({ generator: expected });
    expect(assessGenerator(windows.map(({ health: _, ...w }) => w)).health).toBeNull();
    expect(
      assessValidity(
        windows.map(({ health: _, ...w }) => w),
        [],
        false,
      ).generator,
    ).toBeUndefined();
  });
});
