import type { RunSummary } from '@fathom/contracts';
import { formatRunSummary } from './run-summary.format';

const q = (p50: number | null, count = 10) => ({ count, mean: p50, p50, p95: p50, p99: p50, max: p50 });

function summary(
  extra: Partial<RunSummary> = {},
  semantic: Partial<RunSummary['semantic']> = {},
): RunSummary {
  return {
    status: 'completed',
    reason: null,
    startedAt: 0,
    endedAt: 10_000,
    requests: 720,
    errors: 0,
    errorRate: 0,
    errorClasses: {},
    dropped: 0,
    latencyMs: { e2e: q(3), correctedE2e: q(3), ttft: q(1), itl: q(0.5) },
    throughput: { requestsPerSec: 72, outputTokensPerSec: 650 },
    tokens: { input: 7200, output: 9288 },
    semantic: {
      responses: 720,
      outputTokens: 1032,
      chunks: 1032,
      serverCounted: 720,
      gapMeanMs: 1.2,
      tokenCountMismatches: 0,
      detectorSignals: 0,
      ...semantic,
    },
    gpu: { scrapes: 0, gaps: 0, last: {} },
    tier: 'SLO-0',
    tierReason: 'all objectives hold',
    tierChanges: [{ at: 1, from: null, to: 'SLO-0', reason: 'all objectives hold' }],
    slo: { passed: true, failures: [] },
    sampling: { requests: 720, records: 72, semanticChecked: 72, embedded: 5 },
    ...extra,
  };
}

const print = (s: RunSummary) =>
  formatRunSummary({ id: 'r-1', campaignId: 'c', status: s.status, reason: null, summary: s });

describe(`${formatRunSummary.name}: labels and the verdict block`, () => {
  it('labels stream chunks as chunks, never as tokens', () => {
    const sut = print(summary());
    expect(sut).toContain('stream: 720 responses, 1032 content chunks, mean gap 1.2 ms between chunks');
    expect(sut).toContain('token counts: 0 server/client mismatches in 720 server-counted responses');
    expect(sut).toContain('9288 out, output as the server counted it)');
    expect(sut).not.toMatch(/1032 tokens/);
  });

  it('says "no server count" and names the client tokenizer when the server sent no usage', () => {
    const sut = print(summary({}, { serverCounted: 0 }));
    expect(sut).toContain('token counts: no server count (the server sent no usage)');
    expect(sut).not.toContain('mismatches');
    expect(sut).toContain('output tokens are client-side estimates (gpt-tokenizer, o200k_base)');
  });

  it('says how many requests were sampled for records, semantic checks and embeddings', () => {
    expect(print(summary())).toContain(
      'sampled: latency figures cover all 720 requests; 72 per-request records (10.0 %), 72 semantically checked, 5 embedded',
    );
  });

  it('says TTFT objectives do not apply to a non-streamed run', () => {
    const sut = print(
      summary(
        { latencyMs: { e2e: q(3), correctedE2e: q(3), ttft: q(null, 0), itl: q(null, 0) } },
        { chunks: 0 },
      ),
    );
    expect(sut).toContain(
      'no first-token time (not streamed): TTFT objectives do not apply, E2E judges each response',
    );
    expect(sut).toContain('responses: 720 checked, not streamed (no chunks)');
  });

  it('prints one verdict block in which a run where every request failed neither holds a tier nor passes', () => {
    const sut = print(
      summary({
        errors: 720,
        errorRate: 1,
        errorClasses: { 'http-5xx': 720 },
        tier: 'SLO-breach',
        tierReason:
          'no tier had all its objectives hold: SLO-0 missed: availability 0.00 % < 99.95 %; SLO-1 missed: availability 0.00 % < 99.50 %',
        tierChanges: [
          { at: 1, from: null, to: 'SLO-0', reason: 'x' },
          { at: 2, from: 'SLO-0', to: 'SLO-1', reason: 'y' },
        ],
        slo: { passed: false, failures: ['no request succeeded: all 720 failed'] },
      }),
    );
    const verdict = sut.slice(sut.indexOf('  verdict:'));
    expect(verdict).toBe(
      [
        '  verdict:',
        '    SLO tier: SLO-breach over the whole run (no tier had all its objectives hold: SLO-0 missed: availability 0.00 % < 99.95 %; SLO-1 missed: availability 0.00 % < 99.50 %); during the run SLO-0 -> SLO-1',
        '    SLO: FAILED',
        '      - no request succeeded: all 720 failed',
      ].join('\n'),
    );
  });

  it('explains a tier breach beside a campaign SLO that passed', () => {
    const sut = print(
      summary({ tier: 'SLO-breach', tierReason: 'no tier had all its objectives hold: ...' }),
    );
    expect(sut).toContain("SLO: passed (the campaign's thresholds, which decide the exit code)");
    expect(sut).toContain('why both: the tiers hold the run to the tier objectives');
  });

  it('prints a client-bound verdict in the first lines', () => {
    const sut = print(
      summary({
        validity: {
          valid: false,
          reasons: [
            { kind: 'no-steady-state', detail: 'too short', figures: {} },
            {
              kind: 'client-bound',
              detail: 'the client limited this run: event-loop delay P99 48 ms',
              figures: {},
            },
          ],
        },
      }),
    );
    expect(sut.split('\n')[1]).toBe(
      '  CLIENT-BOUND: the client limited this run: event-loop delay P99 48 ms',
    );
  });
});
