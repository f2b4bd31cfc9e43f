import type { Quantiles, RunSummary, SweepStep } from '@fathom/contracts';
import { assertionCoverageLine, formatRunSummary } from './run-summary.format';

const q = (p99: number): Quantiles => ({
  count: 10,
  mean: p99 / 2,
  p50: p99 / 2,
  p95: p99 * 0.9,
  p99,
  max: p99,
});
const latency = (p99: number) => ({
  e2e: q(p99),
  correctedE2e: q(p99),
  ttft: q(p99 / 4),
  itl: q(20),
  tpot: q(15),
});

function step(
  index: number,
  kind: SweepStep['kind'],
  rate: number | null,
  p99: number,
  passed: boolean,
): SweepStep {
  return {
    index,
    kind,
    targetRatePerSec: rate,
    concurrency: rate === null ? 8 : null,
    durationMs: 1000,
    requests: 10,
    errors: 0,
    errorRate: 0,
    throughput: { requestsPerSec: rate ?? 12, outputTokensPerSec: 100 },
    latencyMs: latency(p99),
    goodput: {
      judged: 10,
      good: passed ? 10 : 2,
      semanticallyGood: 2,
      goodputPerSec: passed ? 9 : 2,
      semanticGoodputPerSec: 2,
    },
    slo: { passed, failures: passed ? [] : [`P99 ${p99} ms > 450 ms`] },
  };
}

const summary: RunSummary = {
  status: 'completed',
  reason: 'stopped: SLO failed (P99 877.0 ms > 450 ms)',
  startedAt: 0,
  endedAt: 8000,
  requests: 100,
  errors: 0,
  errorRate: 0,
  errorClasses: {},
  dropped: 0,
  latencyMs: { ...latency(400), e2e: { ...q(400), percentiles: { p90: 300, 'p99.9': 410 } } },
  throughput: { requestsPerSec: 12.5, outputTokensPerSec: 200 },
  tokens: { input: 1000, output: 1600 },
  tokenizer: 'cl100k_base',
  semantic: { responses: 0, outputTokens: 0, gapMeanMs: null, tokenCountMismatches: 0, detectorSignals: 0 },
  gpu: { scrapes: 0, gaps: 0, last: {} },
  tier: null,
  tierChanges: [],
  slo: { passed: false, failures: ['P99 877.0 ms > 450 ms'] },
  endReason: 'slo-failed',
  warmup: { requests: 7, errors: 0, latencyMs: latency(900) },
  sweep: {
    steps: [
      step(0, 'synchronous', null, 230, true),
      step(2, 'rate', 7.9, 260, true),
      step(1, 'throughput', null, 877, false),
    ],
    knee: {
      sloMaxStep: 2,
      sloMaxRequestsPerSec: 7.9,
      goodputPlateauStep: 2,
      goodputPeakPerSec: 9,
      text: 'highest load within the SLO: step 2, 7.9 req/s',
    },
  },
};

/** The summary of a completed run 'r' of campaign 'c' as `fathom run` prints it. */
const printed = (s: RunSummary, reason: string | null = null) =>
  formatRunSummary({ id: 'r', campaignId: 'c', status: 'completed', reason, summary: s });

describe(formatRunSummary.name, () => {
  it('prints TPOT, the asked percentiles, the warm-up apart, the sweep table with its knee, and why the run ended', () => {
    const text = printed(summary, summary.reason);
    expect(text).toContain('client counts in cl100k_base');
    expect(text).toMatch(/\n {2}TPOT +7\.5 ms/);
    expect(text).toMatch(/percentiles +P90 +P99\.9\n {2}end to end +300\.0 ms +410\.0 ms/);
    expect(text).toContain('warm-up (not judged): 7 requests, 0 errors, e2e P99 900.0 ms');
    expect(text).toMatch(/2 rate +7\.9\/s +7\.9 +260\.0 ms .* pass/);
    expect(text).toMatch(/1 throughput +8 users .* FAIL/);
    expect(text).toContain('knee: highest load within the SLO: step 2, 7.9 req/s');
    expect(text).toContain('ended early: slo.abortOnFail');
  });

  it('prints a quantile under 1 ms to the microsecond, not rounded to 0.1 or 0.0 ms', () => {
    const fast = { ...summary, latencyMs: { ...summary.latencyMs, e2e: { ...q(0.9), p50: 0.078 } } };
    expect(printed(fast)).toMatch(/\n {2}end to end +0\.078 ms +0\.810 ms +0\.900 ms +0\.900 ms/);
  });

  it('says what the generator cost itself, below the client-bound thresholds too', () => {
    const generator = {
      windows: 8,
      loopUtilizationMedian: 0.57,
      loopDelayP99MaxMs: 16.4,
      coreWaitShareMedian: 0.07,
    };
    const text = printed({ ...summary, validity: { valid: true, reasons: [], generator } });
    expect(text).toContain(
      '  generator (median of 8 windows): engine thread busy 57 %, waited for its core 7 % of the time; event-loop delay P99 up to 16.4 ms',
    );
    expect(
      printed({
        ...summary,
        validity: { valid: true, reasons: [], generator: { ...generator, coreRunShareMedian: 0.5 } },
      }),
    ).toContain('engine thread busy 57 % (on its core 50 %), waited for its core 7 % of the time;');
    const { coreWaitShareMedian: _, ...elsewhere } = generator;
    expect(printed({ ...summary, validity: { valid: true, reasons: [], generator: elsewhere } })).toContain(
      'engine thread busy 57 %; event-loop delay P99 up to 16.4 ms',
    );
    expect(printed({ ...summary, validity: { valid: true, reasons: [] } })).not.toContain('generator (');
  });

  it('says per adversarial variant its KL, whether it was sent and whether the hallucination risk moved', () => {
    const figure = (max: number, segments: number) => ({
      status: 'ok' as const,
      maxWindowMeanBits: max,
      meanEntropyBits: 2,
      segments,
    });
    const text = printed({
      ...summary,
      adversarial: [
        {
          shard: 0,
          promptIndex: 0,
          prompt: 'fix a big problem quickly',
          status: 'ok',
          peak: { position: 9, token: ' x', windowMeanBits: 2.4 },
          anchorWord: 3,
          before: figure(2.4, 0),
          variants: [
            {
              text: 'repair a huge issue rapidly',
              substitutions: ['fix -> repair', 'big -> huge', 'problem -> issue', 'quickly -> rapidly'],
              kl: 0.11,
              kept: true,
              after: figure(4.1, 2),
              deltaBits: 1.7,
              riskMoved: true,
            },
            {
              text: 'x',
              substitutions: ['a -> b', 'c -> d', 'e -> f'],
              kl: 0.2,
              kept: false,
              after: null,
              deltaBits: null,
              riskMoved: null,
            },
          ],
        },
        {
          ...{
            shard: 1,
            promptIndex: 0,
            prompt: 'p',
            status: 'skipped',
            reason: 'no entropy peak',
            peak: null,
            anchorWord: null,
            before: null,
            variants: [],
          },
        },
      ],
    });
    expect(text).toContain(
      'adversarial-entropy: 2 prompts probed, 2 variants, 1 within the KL bound and sent, hallucination risk moved on 1',
    );
    expect(text).toContain(
      'KL 0.110, 4 words: after: max window 4.10 bits (+1.70), 2 risk segments, risk MOVED',
    );
    expect(text).toContain('KL 0.200, 3 words: dropped (not sent)');
    expect(text).toContain('shard 1 prompt #0: skipped (no entropy peak)');
  });
});

describe('the goodput line', () => {
  const goodput = (judged: number) => ({
    judged,
    good: judged - 1,
    semanticallyGood: judged - 2,
    goodputPerSec: 10,
    semanticGoodputPerSec: 9,
  });
  const line = (requests: number, judged: number) =>
    printed({
      ...summary,
      requests,
      sweep: undefined,
      semantic: { ...summary.semantic, goodput: goodput(judged) },
    })
      .split('\n')
      .find((l) => l.startsWith('  goodput'));

  it('says the shares come from sampled responses and are scaled to every request when not all were judged', () => {
    expect(line(8430, 199)).toBe(
      '  goodput 10.0 req/s (198/199 sampled responses within SLO), semantic goodput 9.0 req/s (197/199 also passed every semantic check; both rates scale these shares to all 8430 requests)',
    );
  });

  it('keeps the plain counts when every request was judged', () => {
    expect(line(100, 100)).toBe(
      '  goodput 10.0 req/s (99/100 within SLO), semantic goodput 9.0 req/s (98/100 also passed every semantic check)',
    );
  });
});

describe(assertionCoverageLine.name, () => {
  it('prints one line of coverage naming failed and never-run assertions', () => {
    const a = (name: string, state: 'passed' | 'failed' | 'never-ran', passes: number, failures: number) => ({
      name,
      declared: true,
      state,
      passes,
      failures,
    });
    expect(
      assertionCoverageLine({
        declared: 3,
        ran: 2,
        passed: 1,
        failed: 1,
        neverRan: 1,
        byName: [
          a('login.ok', 'passed', 10, 0),
          a('gen.ok', 'failed', 7, 3),
          a('chat.ok', 'never-ran', 0, 0),
        ],
      }),
    ).toBe(
      '2/3 declared assertions ran (67 %): 1 passed, 1 failed, 1 never ran; failing: gen.ok 3/10; never ran: chat.ok',
    );
  });
});
