import type { RequestRecord, TokenLogprob } from '@fathom/contracts';
import { GoodputLedger, LEDGER_REMEMBERED_BATCHES } from '../goodput/goodput.ledger';
import { AdaptiveSampleRate } from './adaptive-sample-rate';
import { scoreAgainstPlantedSpans } from './planted-span.scorer';
import { ResponseAssessor, hasInvalidText } from './response.assessor';

const base: RequestRecord = {
  requestId: 'r1',
  shard: 0,
  scheduledAt: 0,
  startedAt: 0,
  ttftMs: 50,
  e2eMs: 300,
  correctedE2eMs: 300,
  chunkOffsetsMs: [50, 60],
  status: 200,
  errorClass: null,
  inputTokensClient: 10,
  outputTokensClient: 2,
  usage: null,
  content: 'Paris is the capital.',
  finishReason: 'stop',
};

/** A token with k equally likely candidates: entropy log2(k) bits. */
function flat(k: number): TokenLogprob {
  const lp = Math.log(1 / k);
  return {
    token: 't',
    logprob: lp,
    top: Array.from({ length: Math.min(k, 20) }, (_, i) => ({ token: i === 0 ? 't' : `a${i}`, logprob: lp })),
  };
}
const confident: TokenLogprob = {
  token: 't',
  logprob: Math.log(0.97),
  top: [
    { token: 't', logprob: Math.log(0.97) },
    { token: 'u', logprob: Math.log(0.03) },
  ],
};

describe(ResponseAssessor.name, () => {
  it('flags an entropy surge as a risk segment and fails the hallucination check', () => {
    const logprobs = [...Array(10).fill(confident), ...Array(6).fill(flat(32)), ...Array(10).fill(confident)];
    const sut = new ResponseAssessor().assess({ ...base, logprobs }, { e2eMs: 800 });
    expect(sut.status).toBe('ok');
    expect(sut.riskSegments).toHaveLength(1);
    expect(sut.riskSegments[0]).toMatchObject({ start: 10, end: 16 });
    expect(sut.checks['hallucination-risk']).toBe(false);
    expect(sut.latencySloMet).toBe(true);
  });

  it('passes a confident response', () => {
    const sut = new ResponseAssessor().assess({ ...base, logprobs: Array(20).fill(confident) }, null);
    expect(sut).toMatchObject({
      status: 'ok',
      riskSegments: [],
      latencySloMet: null,
      checks: { 'hallucination-risk': true },
    });
  });

  it.each([
    ['missing logprobs', { logprobs: undefined }, 'no-logprobs'],
    [
      'logprobs without alternatives',
      { logprobs: [{ token: 'a', logprob: -0.1, top: [] }] },
      'no-top-logprobs',
    ],
    ['an empty response', { content: '', chunkOffsetsMs: [] }, 'empty'],
    ['a failed request', { status: 503, errorClass: 'http-5xx' as const, content: '' }, 'error'],
    ['non-UTF-8 bytes (U+FFFD)', { content: 'caf\ufffd au lait' }, 'invalid-text'],
    ['a lone surrogate', { content: 'x\ud800y' }, 'invalid-text'],
  ])('classifies %s without throwing', (_, patch, status) => {
    const sut = new ResponseAssessor().assess({ ...base, ...patch } as RequestRecord, { e2eMs: 800 });
    expect(sut.status).toBe(status);
    expect(sut.checks['hallucination-risk']).toBeUndefined();
  });

  it('fails the latency SLO on a slow, a late-first-token or a failed request', () => {
    const sut = new ResponseAssessor();
    expect(sut.assess({ ...base, e2eMs: 900 }, { e2eMs: 800 }).latencySloMet).toBe(false);
    expect(sut.assess({ ...base, ttftMs: 150 }, { ttftMs: 100 }).latencySloMet).toBe(false);
    expect(sut.assess({ ...base, status: 500, errorClass: 'http-5xx' }, {}).latencySloMet).toBe(false);
  });

  it('judges a response with no first-token time (non-streamed) by its E2E budget only', () => {
    const sut = new ResponseAssessor();
    const nonStreamed = { ...base, ttftMs: null, chunkOffsetsMs: [] };
    expect(sut.assess({ ...nonStreamed, e2eMs: 300 }, { e2eMs: 800, ttftMs: 100 }).latencySloMet).toBe(true);
    expect(sut.assess({ ...nonStreamed, e2eMs: 300 }, { ttftMs: 100 }).latencySloMet).toBe(true);
    expect(sut.assess({ ...nonStreamed, e2eMs: 900 }, { e2eMs: 800, ttftMs: 100 }).latencySloMet).toBe(false);
  });

  it('judges prompt explosion only when the record carries the prompt', () => {
    const sut = new ResponseAssessor();
    expect(sut.assess(base, null).promptExplosion).toBeNull();
    const nested = sut.assess({ ...base, prompt: 'a (b [c {d (e [f {g} h] i) j} k] l) m' }, null);
    expect(nested.promptExplosion?.exploded).toBe(true);
    expect(nested.checks['prompt-explosion']).toBe(false);
    expect(
      sut.assess({ ...base, prompt: 'What is the capital of France?' }, null).checks['prompt-explosion'],
    ).toBe(true);
  });
});

describe(hasInvalidText.name, () => {
  it('accepts paired surrogates (emoji) and rejects replacement characters', () => {
    expect(hasInvalidText('ok \ud83d\ude00')).toBe(false);
    expect(hasInvalidText('\ufffd')).toBe(true);
  });
});

describe(GoodputLedger.name, () => {
  it('counts semantic goodput beside goodput and ignores a redelivered batch', () => {
    const sut = new GoodputLedger();
    expect(sut.admitBatch('b1')).toBe(true);
    sut.add({ requestId: 'a', latencySloMet: true, semanticChecks: { h: true } });
    sut.add({ requestId: 'b', latencySloMet: true, semanticChecks: { h: false } });
    expect(sut.admitBatch('b2')).toBe(true);
    sut.add({ requestId: 'c', latencySloMet: false, semanticChecks: { h: true } });
    expect(sut.admitBatch('b1')).toBe(false);
    expect(sut.report(2)).toMatchObject({
      requests: 3,
      goodRequests: 2,
      semanticallyGoodRequests: 1,
      checkFailures: { h: 1 },
      goodputPerSecond: 1,
    });
  });

  it('remembers a bounded number of batches, the newest', () => {
    const sut = new GoodputLedger();
    for (let i = 0; i <= LEDGER_REMEMBERED_BATCHES; i++) expect(sut.admitBatch(`b${i}`)).toBe(true);
    expect(sut.admitBatch(`b${LEDGER_REMEMBERED_BATCHES}`)).toBe(false);
    expect(sut.admitBatch('b0')).toBe(true); // the oldest was forgotten
  });
});

describe(AdaptiveSampleRate.name, () => {
  it('halves the rate when the CPU is busy and climbs back when it is not', () => {
    const sut = new AdaptiveSampleRate({ initial: 0.4, min: 0.01, max: 1, targetCpuPct: 70 });
    expect(sut.adjust(95)).toBeCloseTo(0.2);
    expect(sut.adjust(95)).toBeCloseTo(0.1);
    expect(sut.adjust(20)).toBeCloseTo(0.1 + 0.05 * 0.99);
    for (let i = 0; i < 40; i++) sut.adjust(10);
    expect(sut.rate).toBe(1);
  });

  it('takes about rate x calls', () => {
    const sut = new AdaptiveSampleRate({ initial: 0.25 });
    expect(Array.from({ length: 100 }, () => sut.take()).filter(Boolean)).toHaveLength(25);
  });
});

describe(scoreAgainstPlantedSpans.name, () => {
  it('scores spans and tokens', () => {
    const sut = scoreAgainstPlantedSpans([
      { flagged: [{ start: 4, end: 8 }], planted: [{ start: 5, end: 9 }] },
      { flagged: [{ start: 0, end: 2 }], planted: [] },
      { flagged: [], planted: [{ start: 1, end: 3 }] },
    ]);
    expect(sut).toMatchObject({
      plantedSpans: 2,
      flaggedSegments: 2,
      spanRecall: 0.5,
      spanPrecision: 0.5,
      cleanResponsesFlagged: 1,
    });
    expect(sut.tokenRecall).toBeCloseTo(3 / 6);
    expect(sut.tokenPrecision).toBeCloseTo(3 / 6);
  });
});
