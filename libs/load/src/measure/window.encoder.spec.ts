import { WindowEncoder, type Scheduler } from './window.encoder';
import { WindowRecorder, type WindowHistograms } from './window.recorder';
import { mergeWindows, type WindowSnapshot } from './window.snapshot';

const sample = (e2eMs: number) => ({
  e2eMs,
  correctedE2eMs: e2eMs + 1,
  ttftMs: e2eMs / 2,
  tpotMs: e2eMs / 4,
  chunkOffsetsMs: [e2eMs / 2, e2eMs * 0.75, e2eMs],
  errorClass: null,
  inputTokens: 3,
  outputTokens: 2,
});

/** A scheduler the test steps by hand: one queued task per `step()`. */
function manualScheduler() {
  const tasks: (() => void)[] = [];
  let cancelled = 0;
  const schedule: Scheduler = (task) => {
    tasks.push(task);
    return () => {
      const i = tasks.indexOf(task);
      if (i >= 0) {
        tasks.splice(i, 1);
        cancelled++;
      }
    };
  };
  return {
    schedule,
    step: () => (tasks.shift() as () => void)(),
    get queued() {
      return tasks.length;
    },
    get cancelled() {
      return cancelled;
    },
  };
}

function setUp(maxPending = 2) {
  const recorder = new WindowRecorder(0, 1000);
  const reference = new WindowRecorder(0, 1000);
  const delivered: WindowSnapshot[] = [];
  const recycled: WindowHistograms[] = [];
  const clock = manualScheduler();
  const sut = new WindowEncoder({
    deliver: (w) => delivered.push(w),
    recycle: (h) => {
      recycled.push(h);
      recorder.recycle(h);
    },
    maxPending,
    schedule: clock.schedule,
  });
  /** Records the same values in both recorders; closes the window in both (reference: inline flush). */
  const window = (values: number[], start: number) => {
    for (const v of values) {
      recorder.observe(sample(v));
      reference.observe(sample(v));
    }
    sut.push(recorder.rotate(start));
    return reference.flush(start);
  };
  return { recorder, delivered, recycled, clock, sut, window };
}

describe(WindowEncoder.name, () => {
  it('encodes one histogram per macrotask and delivers the window whole after the fifth, equal to an inline flush', () => {
    const { delivered, clock, sut, window } = setUp();
    const expected = window([5, 12, 80], 1000);
    for (let tick = 1; tick <= 4; tick++) {
      clock.step();
      expect(delivered).toHaveLength(0);
      expect(clock.queued).toBe(1);
    }
    clock.step();
    expect(delivered).toEqual([expected]);
    expect(clock.queued).toBe(0);
    expect(sut.pending).toBe(0);
  });

  it('delivers windows in order, each with its own exact counts, while the live recorder keeps recording', () => {
    const { delivered, clock, window } = setUp(3);
    const a = window([1, 2], 0);
    const b = window([300, 400, 500], 1000);
    clock.step();
    const c = window([7], 2000);
    while (clock.queued > 0) clock.step();
    expect(delivered.map((w) => w.seq)).toEqual([0, 1, 2]);
    expect(delivered).toEqual([a, b, c]);
    expect(mergeWindows(delivered).quantiles).toEqual(mergeWindows([a, b, c]).quantiles);
    expect(mergeWindows(delivered).quantiles.itl.count).toBe(12);
  });

  it('keeps at most maxPending windows: a push beyond it finishes the oldest at once, none lost', () => {
    const { delivered, clock, sut, window } = setUp(2);
    const expected = [window([1], 0), window([2], 1000)];
    expect(delivered).toHaveLength(0);
    expected.push(window([3], 2000));
    expect(sut.pending).toBe(2);
    expect(delivered).toEqual([expected[0]]);
    expected.push(window([4], 3000));
    expect(sut.pending).toBe(2);
    expect(delivered).toEqual(expected.slice(0, 2));
    while (clock.queued > 0) clock.step();
    expect(delivered).toEqual(expected);
  });

  it('drain delivers everything pending in order and cancels the scheduled tick', () => {
    const { delivered, clock, sut, window } = setUp(4);
    const expected = [window([1, 2, 3], 0), window([], 1000)];
    clock.step();
    expected.push(window([9], 2000));
    sut.drain();
    expect(delivered).toEqual(expected);
    expect(clock.queued).toBe(0);
    expect(clock.cancelled).toBe(1);
    sut.drain();
    expect(delivered).toHaveLength(3);
  });

  it('reuses encoded histograms, cleared, for a later window (no carry-over of old values)', () => {
    const { recorder, recycled, clock, window } = setUp();
    window([50, 60], 0);
    while (clock.queued > 0) clock.step();
    expect(recycled).toHaveLength(1);
    recorder.rotate(1000); // retires the set that was live meanwhile; the recycled set goes live
    recorder.observe(sample(7));
    const { histograms } = recorder.rotate(2000);
    expect(histograms).toEqual(recycled[0]);
    histograms.forEach((h, i) => expect(h).toBe(recycled[0][i]));
    expect(histograms.map((h) => h.totalCount)).toEqual([1, 1, 1, 2, 1]);
  });
});
