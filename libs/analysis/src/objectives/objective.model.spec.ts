import type { RecordDigest } from '../evidence/record-digest';
import type { SpanView } from '../evidence/run-timeline';
import { evaluateObjective } from './objective.model';

const digest = (e2eMs: number, ttftMs: number | null): RecordDigest => ({
  at: 0,
  startedAt: 0,
  lateMs: 0,
  ok: true,
  errorClass: null,
  e2eMs,
  ttftMs,
  gapMaxMs: null,
  gapMedianMs: null,
  tokenMismatch: null,
  outputTokens: 8,
  riskSegments: null,
  maxWindowEntropyBits: null,
  calls: [],
});

const spanOf = (digests: RecordDigest[]) => ({ digests }) as unknown as SpanView;

describe(evaluateObjective.name, () => {
  it('judges a goodput objective with a TTFT budget by E2E alone on responses with no first token', () => {
    const nonStreamed = spanOf([digest(20, null), digest(30, null), digest(900, null)]);
    const sut = evaluateObjective({ kind: 'goodput', min: 0.5, e2eMaxMs: 800, ttftMaxMs: 100 }, nonStreamed, {
      breakerTripsPerMinute: 0,
    });
    expect(sut.value).toBeCloseTo(2 / 3);
    expect(sut.ok).toBe(true);
  });

  it('still holds streamed responses to the TTFT budget', () => {
    const streamed = spanOf([digest(20, 150), digest(30, 50)]);
    const sut = evaluateObjective({ kind: 'goodput', min: 0.9, ttftMaxMs: 100 }, streamed, {
      breakerTripsPerMinute: 0,
    });
    expect(sut.value).toBe(0.5);
    expect(sut.ok).toBe(false);
  });
});
