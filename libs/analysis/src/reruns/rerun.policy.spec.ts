import type { RunSummary } from '@fathom/contracts';
import {
  campaignRunHistory,
  type CampaignRunTally,
  decideRerun,
  measurementInvalidity,
  rerunBackoffMs,
  rerunReason,
  rerunRefusal,
  mayRerunAfter,
} from './rerun.policy';

describe(decideRerun.name, () => {
  const config = { maxReruns: 2, cooldownMs: 5000 };
  const idle = { rerunsStarted: 0, rerunPending: false, lastRunEndedAt: 10_000 };

  it('waits out the cool-down after the last run ended', () => {
    expect(decideRerun(config, idle, 12_000)).toEqual({ start: true, delayMs: 3000 });
    expect(decideRerun(config, idle, 20_000)).toEqual({ start: true, delayMs: 0 });
  });

  it('refuses past the cap', () => {
    expect(decideRerun(config, { ...idle, rerunsStarted: 2 }, 20_000)).toEqual({
      start: false,
      reason: 'rerun cap reached (2/2)',
    });
  });

  it('folds requests into a pending rerun', () => {
    expect(decideRerun(config, { ...idle, rerunPending: true }, 20_000).start).toBe(false);
  });

  it('does not rerun while the run still goes', () => {
    expect(decideRerun(config, { ...idle, lastRunEndedAt: null }, 20_000).start).toBe(false);
  });

  it('waits the longer of the cool-down and the backoff', () => {
    const backoff = { maxReruns: 5, cooldownMs: 5000, backoffMs: 4000, backoffMaxMs: 60_000 };
    expect(decideRerun(backoff, { ...idle, rerunsStarted: 0 }, 12_000)).toEqual({
      start: true,
      delayMs: 3000,
    });
    expect(decideRerun(backoff, { ...idle, rerunsStarted: 2 }, 12_000)).toEqual({
      start: true,
      delayMs: 8000,
    });
  });
});

describe(campaignRunHistory.name, () => {
  const tally = (over: Partial<CampaignRunTally> = {}): CampaignRunTally => ({
    reruns: 0,
    openReruns: 0,
    unended: 0,
    lastEndedAt: null,
    ...over,
  });

  it('counts reruns and takes the latest end when every run ended', () => {
    expect(campaignRunHistory(tally({ reruns: 1, lastEndedAt: 3000 }), false)).toEqual({
      rerunsStarted: 1,
      rerunPending: false,
      lastRunEndedAt: 3000,
    });
  });

  it('has no last end while a run still goes, and none for a campaign without runs', () => {
    expect(campaignRunHistory(tally({ unended: 1, lastEndedAt: 1000 }), false).lastRunEndedAt).toBeNull();
    expect(campaignRunHistory(tally(), false)).toEqual({
      rerunsStarted: 0,
      rerunPending: false,
      lastRunEndedAt: null,
    });
  });

  it('holds a rerun pending while one waits or an unended rerun exists', () => {
    expect(campaignRunHistory(tally({ lastEndedAt: 1000 }), true).rerunPending).toBe(true);
    expect(campaignRunHistory(tally({ reruns: 1, openReruns: 1, unended: 1 }), false).rerunPending).toBe(
      true,
    );
    expect(campaignRunHistory(tally({ unended: 1 }), false).rerunPending).toBe(false);
  });
});

describe(rerunReason.name, () => {
  it('joins the asked-for reason and the invalidity, or says none', () => {
    expect(rerunReason('tier SLO-0 -> SLO-1', 'invalid measurement: x')).toBe(
      'tier SLO-0 -> SLO-1; invalid measurement: x',
    );
    expect(rerunReason(null, 'invalid measurement: x')).toBe('invalid measurement: x');
    expect(rerunReason(null, null)).toBeNull();
  });
});

function runSummary(): RunSummary {
  const quantiles = { count: 100, mean: 200, p50: 190, p95: 400, p99: 610, max: 700 };
  return {
    status: 'completed',
    reason: null,
    startedAt: 1_700_000_000_000,
    endedAt: 1_700_000_010_000,
    requests: 100,
    errors: 0,
    errorRate: 0,
    errorClasses: {},
    dropped: 0,
    latencyMs: { e2e: quantiles, correctedE2e: quantiles, ttft: quantiles, itl: quantiles },
    throughput: { requestsPerSec: 10, outputTokensPerSec: 640 },
    tokens: { input: 2000, output: 6400 },
    semantic: {
      responses: 100,
      outputTokens: 6400,
      gapMeanMs: 14,
      tokenCountMismatches: 0,
      detectorSignals: 0,
    },
    gpu: { scrapes: 0, gaps: 0, last: {} },
    tier: 'SLO-0',
    tierChanges: [],
    slo: { passed: true, failures: [] },
  };
}

describe(measurementInvalidity.name, () => {
  it('takes the analyzer verdict when the report carries one', () => {
    const reasons = [{ kind: 'generator-bottleneck', detail: 'client CPU 97 %' }];
    expect(measurementInvalidity(runSummary(), { valid: false, reasons })).toBe(
      'invalid measurement: generator-bottleneck: client CPU 97 %',
    );
    expect(measurementInvalidity({ ...runSummary(), dropped: 500 }, { valid: true, reasons: [] })).toBeNull();
  });

  it('falls back to dropped iterations and token-count mismatches without a verdict', () => {
    expect(measurementInvalidity(runSummary(), undefined)).toBeNull();
    expect(measurementInvalidity({ ...runSummary(), requests: 90, dropped: 10 }, undefined)).toMatch(
      /generator-bottleneck: 10 of 100 iterations dropped/,
    );
    const mismatched = {
      ...runSummary(),
      semantic: { ...runSummary().semantic, responses: 100, tokenCountMismatches: 6 },
    };
    expect(measurementInvalidity(mismatched, undefined)).toMatch(/token-count-mismatch: 6 of 100/);
  });

  it('asks no rerun for a run only too short for a steady state: the same duration is as short again', () => {
    const short = {
      kind: 'no-steady-state',
      detail: 'only 0 full windows after ramp-up (< 3)',
      figures: { windows: 0 },
    };
    const varying = { kind: 'no-steady-state', detail: 'CV 0.4', figures: { cv: 0.4, windows: 8 } };
    const lost = { kind: 'telemetry-lost', detail: '12 requests missing' };
    expect(measurementInvalidity(runSummary(), { valid: false, reasons: [short] })).toBeNull();
    expect(measurementInvalidity(runSummary(), { valid: false, reasons: [varying] })).toBe(
      'invalid measurement: no-steady-state: CV 0.4',
    );
    expect(measurementInvalidity(runSummary(), { valid: false, reasons: [short, lost] })).toBe(
      'invalid measurement: telemetry-lost: 12 requests missing',
    );
  });

  it('never reruns an aborted or failed run for its measurement', () => {
    expect(measurementInvalidity({ ...runSummary(), status: 'aborted', dropped: 999 }, undefined)).toBeNull();
  });
});

describe(rerunBackoffMs.name, () => {
  it('leaves the first rerun to the cool-down, then doubles up to the cap', () => {
    expect([0, 1, 2, 3, 10].map((n) => rerunBackoffMs(n, 1000, 6000))).toEqual([0, 1000, 2000, 4000, 6000]);
  });
});

describe(mayRerunAfter.name, () => {
  it('refuses a rerun after an aborted run and allows one after a finished run', () => {
    expect(mayRerunAfter('aborted')).toBe(false);
    expect(mayRerunAfter('completed')).toBe(true);
    expect(mayRerunAfter('failed')).toBe(true);
  });
});

describe(rerunRefusal.name, () => {
  it('refuses to rerun a client-bound run with the identical spec, with the advice', () => {
    const reasons = [
      { kind: 'no-steady-state', detail: 'too short' },
      { kind: 'client-bound', detail: 'the client limited this run. Advice: lower load.recordsPerSecond' },
    ];
    expect(rerunRefusal({ valid: false, reasons })).toBe(
      'client-bound, no rerun of the identical spec: the client limited this run. Advice: lower load.recordsPerSecond',
    );
    expect(rerunRefusal({ valid: false, reasons: [reasons[0]] })).toBeNull();
    expect(rerunRefusal(undefined)).toBeNull();
  });
});
