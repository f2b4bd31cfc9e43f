import { Detectors, envelope, shadowRunId, type DetectorSignal } from '@fathom/contracts';
import type { StoredShadowBreaker } from '@fathom/storage';
import { judgeShadowWindow, shadowBreakerKey } from './shadow-breaker.util';

const CANDIDATE = 'http://10.0.0.7:8000/v1';
const RUN_ID = shadowRunId('campaign-1');
const key = { target: CANDIDATE, layer: 'llm', node: '10.0.0.7:8000' };

/** The orchestrator's verdict on the window that ended at `at` (ms). */
const windowSignal = (at: number, severity: DetectorSignal['severity']): DetectorSignal => ({
  ...envelope('campaign-1', RUN_ID, at),
  kind: 'detector',
  detector: Detectors.shadowRegression,
  requestId: null,
  severity,
  message: severity === 'info' ? 'within the noise floor' : 'hallucinationRisk +0.2 (noise 0)',
  figures: { samples: 10 },
  labels: { target: CANDIDATE, metrics: '' },
});

/** What the previous analyzer left in the store, read back as the store gives it (JSON). */
const storedAfter = (signals: DetectorSignal[]): StoredShadowBreaker => {
  let stored: StoredShadowBreaker | null = null;
  for (const signal of signals) stored = judgeShadowWindow(stored, key, signal)?.breaker ?? stored;
  return JSON.parse(JSON.stringify(stored)) as StoredShadowBreaker;
};

describe(judgeShadowWindow.name, () => {
  it('opens on a sustained regression and stores since when and the window it judged', () => {
    const signal = windowSignal(120_000, 'critical');
    const sut = judgeShadowWindow(null, key, signal)!;

    expect(sut.transitions.map((t) => [t.from, t.to, t.at])).toEqual([['closed', 'open', 120_000]]);
    expect(sut.breaker).toMatchObject({
      runId: RUN_ID,
      key,
      state: 'open',
      since: 120_000,
      openedAt: 120_000,
      judgedUntil: 120_000,
      lastSignalId: signal.id,
    });
  });

  it('keeps a stored open breaker open on a further regression, announcing nothing', () => {
    const stored = storedAfter([windowSignal(120_000, 'critical')]);
    const sut = judgeShadowWindow(stored, key, windowSignal(180_000, 'critical'))!;

    expect(sut.transitions).toEqual([]);
    expect(sut.breaker).toMatchObject({ state: 'open', since: 120_000, judgedUntil: 180_000 });
  });

  it('goes on from the probes a stored half-open breaker passed: two more clean windows close it', () => {
    const stored = storedAfter([windowSignal(120_000, 'critical'), windowSignal(180_000, 'info')]);
    expect(stored).toMatchObject({ state: 'half-open', since: 180_000, probes: [{ at: 180_000, ok: true }] });

    const second = judgeShadowWindow(stored, key, windowSignal(240_000, 'info'))!;
    expect(second.transitions).toEqual([]);
    const third = judgeShadowWindow(second.breaker, key, windowSignal(300_000, 'info'))!;
    expect(third.transitions.map((t) => `${t.from} -> ${t.to}`)).toEqual(['half-open -> closed']);
  });

  it('reopens a stored half-open breaker on a regressed window', () => {
    const stored = storedAfter([windowSignal(120_000, 'critical'), windowSignal(180_000, 'info')]);
    const sut = judgeShadowWindow(stored, key, windowSignal(240_000, 'warning'))!;

    expect(sut.transitions.map((t) => `${t.from} -> ${t.to}`)).toEqual(['half-open -> open']);
    expect(sut.breaker).toMatchObject({ state: 'open', openedAt: 240_000 });
  });

  it('skips a window judged already: a redelivery after a restart changes nothing', () => {
    const opening = windowSignal(120_000, 'critical');
    const stored = storedAfter([opening, windowSignal(180_000, 'info')]);

    expect(judgeShadowWindow(stored, key, opening)).toBeNull();
    expect(judgeShadowWindow(stored, key, windowSignal(180_000, 'info'))).toBeNull();
  });
});

describe(shadowBreakerKey.name, () => {
  it('keys the breaker by the candidate named in the signal, and by nothing without one', () => {
    expect(shadowBreakerKey(windowSignal(1, 'info'))).toEqual(key);
    const unnamed = windowSignal(1, 'info');
    expect(shadowBreakerKey({ ...unnamed, labels: { target: 'not a url' } })).toBeNull();
    expect(shadowBreakerKey({ ...unnamed, labels: undefined })).toBeNull();
  });
});
