import fc from 'fast-check';
import type { RecordDigest } from '../evidence/record-digest';
import { toolContractRatesOf } from '../evidence/tool-drift';
import { recordCountsOf, type Objective } from '../objectives/objective.model';
import { tokenAgreementOf } from '../validity/measurement-validity';
import {
  ReportDigestsAccumulator,
  REPORT_DIGEST_SAMPLE_SEED,
  foldReportDigests,
  type ReportDigestOptions,
} from './report-digests.accumulator';
import { slowestRequests } from './slowest-requests';

const OBJECTIVES: Objective[] = [
  { kind: 'goodput', min: 0.9, e2eMaxMs: 400, ttftMaxMs: 100 },
  { kind: 'semantic-goodput', min: 0.9, e2eMaxMs: 500 },
  { kind: 'agent-success', min: 0.9 },
] as Objective[];

const OPTIONS: ReportDigestOptions = {
  objectives: OBJECTIVES,
  stallMs: 300,
  spanFromMs: 1_000,
  maxDigests: Number.POSITIVE_INFINITY,
};

/** A digest from a few drawn figures: ties in E2E and end time are frequent on purpose. */
function digestOf(i: number, e2e: number, end: number, flags: number): RecordDigest {
  const ok = flags % 5 !== 0;
  return {
    requestId: `r${i % 97}`,
    at: 900 + end * 10,
    startedAt: 900 + end * 10 - e2e,
    lateMs: 0,
    ok,
    errorClass: ok ? null : 'http-5xx',
    e2eMs: e2e,
    ttftMs: flags % 3 === 0 ? null : e2e / 4,
    gapMaxMs: flags % 7 === 0 ? null : e2e / 2,
    gapMedianMs: null,
    tokenMismatch: flags % 4 === 0 ? null : (flags % 11) - 2,
    outputTokens: (flags * 13) % 300,
    riskSegments: flags % 6 === 0 ? null : flags % 2,
    maxWindowEntropyBits: null,
    calls: [{ layer: flags % 2 ? 'agent' : 'llm', path: '/x', ok, status: ok ? 200 : 500 }],
    ...(flags % 8 === 0
      ? {
          toolCalls: [
            {
              tool: 't',
              version: `v${flags % 3}`,
              contractPassed: ok,
              fallback: false,
              fallbackTriggered: !ok,
            },
          ],
        }
      : {}),
  };
}

const digestsArb = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 60 }), fc.nat(1000)), {
    maxLength: 300,
  })
  .map((rows) => rows.map(([e2e, end, flags], i) => digestOf(i, e2e * 25, end, flags)));

/** What the report computed from the whole list before it folded (stable sort by end, as `RunTimeline`). */
function fromTheList(digests: readonly RecordDigest[]) {
  const byEnd = [...digests].sort((a, b) => a.at - b.at);
  const inSpan = byEnd.filter((d) => d.at > OPTIONS.spanFromMs);
  const counts = recordCountsOf(inSpan);
  return {
    slowest: slowestRequests(byEnd, []),
    semantic: {
      judgedResponses: byEnd.filter((d) => d.riskSegments !== null).length,
      riskyResponses: byEnd.filter((d) => (d.riskSegments ?? 0) > 0).length,
      stalledResponses: byEnd.filter((d) => (d.gapMaxMs ?? 0) >= OPTIONS.stallMs).length,
      tokenCountMismatches: byEnd.filter((d) => (d.tokenMismatch ?? 0) !== 0).length,
    },
    tokenAgreement: tokenAgreementOf(byEnd),
    goodput: OBJECTIVES.filter((o) => o.kind === 'goodput' || o.kind === 'semantic-goodput').map((o) =>
      counts.goodput(o as never),
    ),
    agent: counts.agentCalls(),
    byEnd,
  };
}

function exactFigures(digests: readonly RecordDigest[], maxDigests: number) {
  const f = foldReportDigests(digests, { ...OPTIONS, maxDigests });
  return {
    total: f.total,
    bounds: [f.startedAtMin, f.endedAtMax],
    slowest: slowestRequests(f.slowest, []),
    semantic: f.semantic,
    tokenAgreement: f.tokenAgreement,
    tools: toolContractRatesOf(f.toolCalls),
    outputTokens: [...f.outputTokens].sort((a, b) => a[0] - b[0]),
    requestEnds: [...f.requestEnds.ends].sort((a, b) => a[0].localeCompare(b[0])),
    requestEndsComplete: f.requestEnds.complete,
    goodput: OBJECTIVES.filter((o) => o.kind === 'goodput' || o.kind === 'semantic-goodput').map((o) =>
      f.wholeRun.goodput(o as never),
    ),
    agent: f.wholeRun.agentCalls(),
  };
}

describe(ReportDigestsAccumulator.name, () => {
  it('folds to the figures the whole list gives, held digests in end order', () => {
    fc.assert(
      fc.property(digestsArb, (digests) => {
        const expected = fromTheList(digests);

        const sut = foldReportDigests(digests, OPTIONS);

        expect(slowestRequests(sut.slowest, [])).toEqual(expected.slowest);
        expect(sut.semantic).toEqual(expected.semantic);
        expect(sut.tokenAgreement).toEqual(expected.tokenAgreement);
        expect(OBJECTIVES.slice(0, 2).map((o) => sut.wholeRun.goodput(o as never))).toEqual(expected.goodput);
        expect(sut.wholeRun.agentCalls()).toEqual(expected.agent);
        expect(sut.held).toEqual(expected.byEnd);
        expect(sut.sample).toBeNull();
      }),
      { numRuns: 200 },
    );
  });

  it('keeps every exact figure under a cap and holds no more digests than the cap', () => {
    fc.assert(
      fc.property(digestsArb, fc.integer({ min: 1, max: 50 }), (digests, cap) => {
        const sut = new ReportDigestsAccumulator({ ...OPTIONS, maxDigests: cap });
        for (const d of digests) {
          sut.addDigests([d]);
          expect(sut.heldCount).toBeLessThanOrEqual(cap);
        }

        expect(exactFigures(digests, cap)).toEqual(exactFigures(digests, Number.POSITIVE_INFINITY));
        const figures = sut.figures();
        expect(figures.sample).toEqual(
          digests.length > cap ? { kept: cap, of: digests.length, seed: REPORT_DIGEST_SAMPLE_SEED } : null,
        );
        expect(figures.held).toHaveLength(Math.min(cap, digests.length));
      }),
      { numRuns: 200 },
    );
  });

  it('indexes at most maxRequestEnds request ends, each the latest of its id, and says when it is full', () => {
    fc.assert(
      fc.property(digestsArb, fc.integer({ min: 1, max: 120 }), (digests, cap) => {
        const sut = foldReportDigests(digests, { ...OPTIONS, maxRequestEnds: cap });

        const ids = new Set(digests.map((d) => d.requestId));
        expect(sut.requestEnds.ends.size).toBe(Math.min(cap, ids.size));
        expect(sut.requestEnds.complete).toBe(ids.size <= cap);
        for (const [id, at] of sut.requestEnds.ends)
          expect(at).toBe(Math.max(...digests.filter((d) => d.requestId === id).map((d) => d.at)));
      }),
      { numRuns: 200 },
    );
  });

  it('draws the same sample of a run every time, spread over the whole run', () => {
    const digests = Array.from({ length: 10_000 }, (_, i) => digestOf(i, 100, i, i));

    const first = foldReportDigests(digests, { ...OPTIONS, maxDigests: 500 });
    const again = foldReportDigests(digests, { ...OPTIONS, maxDigests: 500 });

    expect(again.held).toEqual(first.held);
    // Uniform: each tenth of the run has about a tenth of the sample (50 +- 25).
    const perTenth = Array.from({ length: 10 }, () => 0);
    for (const d of first.held) perTenth[Math.floor((d.at - 900) / 10 / 1000)]++;
    for (const n of perTenth) expect(Math.abs(n - 50)).toBeLessThan(25);
  });

  it('refuses a cap below one and an objective it did not fold', () => {
    expect(() => new ReportDigestsAccumulator({ ...OPTIONS, maxDigests: 0 })).toThrow(RangeError);
    const sut = foldReportDigests([], { ...OPTIONS, objectives: [] });
    expect(() => sut.wholeRun.goodput(OBJECTIVES[0] as never)).toThrow(/not among the folded/);
  });
});
