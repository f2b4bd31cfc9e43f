import { envelope, type DetectorSignal, type GpuTelemetry, type TelemetryWindow } from '@fathom/contracts';
import { decodeHistogram, encodeHistogram, mergeWindows } from '@fathom/load';
import type { LayerCall, RecordDigest } from '../../evidence/record-digest';
import { RunTimeline } from '../../evidence/run-timeline';
import { diagnose } from '../root-cause.engine';
import { retryAfterSeconds } from './error-classes.cause';
import { twoProportionZ } from './hallucination-rise.cause';

const T0 = 1_700_000_000_000;

const histogramOf = (ms: number, count: number) => {
  const h = decodeHistogram(mergeWindows([]).histogramsUs.e2e);
  h.recordValueWithCount(Math.round(ms * 1000), count);
  return encodeHistogram(h);
};

/** One-second windows from T0 to `seconds`; `latency(s)` gives E2E, TTFT and ITL of second s. */
function windows(
  seconds: number,
  latency: (s: number) => { e2e: number; ttft: number; itl: number },
): TelemetryWindow[] {
  return Array.from({ length: seconds }, (_, seq) => {
    const l = latency(seq);
    return {
      ...envelope('c', 'r', T0 + 1_000 * (seq + 1)),
      generatorId: 'g',
      shard: 0,
      windowStart: T0 + 1_000 * seq,
      windowMs: 1_000,
      seq,
      requests: 50,
      errors: 0,
      errorClasses: {},
      dropped: 0,
      late: 0,
      inputTokens: 0,
      outputTokens: 0,
      histogramsUs: {
        e2e: histogramOf(l.e2e, 50),
        correctedE2e: histogramOf(l.e2e, 50),
        ttft: histogramOf(l.ttft, 50),
        itl: histogramOf(l.itl, 50),
      },
    };
  });
}

function digest(
  at: number,
  call: Partial<LayerCall> = {},
  errorClass: string | null = null,
  e2eMs = 40,
): RecordDigest {
  const ok = call.ok ?? true;
  return {
    at,
    startedAt: at - e2eMs,
    lateMs: 0,
    ok,
    errorClass: ok ? null : errorClass,
    e2eMs,
    ttftMs: null,
    gapMaxMs: null,
    gapMedianMs: null,
    tokenMismatch: null,
    outputTokens: 0,
    riskSegments: null,
    maxWindowEntropyBits: null,
    calls: [{ layer: 'llm', path: '/v1/chat/completions', ok, status: ok ? 200 : 0, ...call }],
  };
}

/** `perSecond` chat calls a second over `seconds`; `fail(i)` makes call i fail as given. */
function callTimeline(
  seconds: number,
  perSecond: number,
  fail: (i: number, at: number) => { call: Partial<LayerCall>; errorClass: string } | null,
): RunTimeline {
  const sut = new RunTimeline();
  sut.addDigests(
    Array.from({ length: seconds * perSecond }, (_, i) => {
      const at = T0 + 20 + Math.floor((i * 1_000) / perSecond);
      const f = fail(i, at);
      return f ? digest(at, { ok: false, ...f.call }, f.errorClass) : digest(at);
    }),
  );
  return sut;
}

function gpu(at: number, metrics: Record<string, number>): GpuTelemetry {
  return {
    ...envelope('c', 'r', at),
    source: 'vllm',
    url: 'http://sim/metrics',
    scrapedAt: at,
    health: 'ok',
    samples: Object.entries(metrics).map(([metric, value]) => ({
      gpu: '0',
      instance: null,
      metric,
      value,
      unit: 'x',
    })),
  } as unknown as GpuTelemetry;
}

describe('everyday causes', () => {
  describe('errors by class', () => {
    it('names rate-limited (not server-errors) for 429s, with the Retry-After the target asked for', () => {
      const timeline = callTimeline(8, 40, (i) =>
        i % 10 === 0
          ? {
              call: {
                status: 429,
                error: 'Rate limit reached for requests. Please try again in 3s.',
              },
              errorClass: 'http-4xx',
            }
          : null,
      );
      const causes = diagnose(timeline, T0 + 8_000);
      expect(causes.map((c) => c.kind)).toEqual(['rate-limited']);
      expect(causes[0].figures).toMatchObject({ share: expect.closeTo(0.1, 2), retryAfterMaxS: 3 });
      expect(causes[0].advice[0]).toMatch(/Retry-After.*3 s/);
      expect(causes[0].thresholds).toEqual([
        { name: 'share of calls', value: 0.005, source: 'spec', note: 'tier SLO-1 availability 99.5 %' },
      ]);
    });

    it('takes the Retry-After header the load-generator read over the error text, and says which', () => {
      const timeline = callTimeline(8, 40, (i) =>
        i % 10 === 0
          ? {
              call: { status: 429, error: 'HTTP 429: quota', retryAfterS: i % 20 === 0 ? 2 : 5 },
              errorClass: 'http-4xx',
            }
          : null,
      );
      const [cause] = diagnose(timeline, T0 + 8_000);
      expect(cause.kind).toBe('rate-limited');
      expect(cause.figures).toMatchObject({
        retryAfterMaxS: 5,
        retryAfterShare: 1,
        retryAfterHeaderShare: 1,
      });
      expect(cause.evidence).toContain('Retry-After on 32/32 answers (32 from the header): 2-5 s');
      expect(cause.advice[0]).toMatch(/Retry-After.*5 s/);
    });

    it('names one 5xx in 120 calls at once: 0.8 % breaks SLO-1 availability (99.5 %)', () => {
      const timeline = callTimeline(3, 40, (i) =>
        i === 60 ? { call: { status: 503, error: 'HTTP 503: overloaded' }, errorClass: 'http-5xx' } : null,
      );
      const [cause] = diagnose(timeline, T0 + 3_000);
      expect(cause).toMatchObject({ kind: 'server-errors', figures: { failed: 1, calls: 120 } });
    });

    it('names server-errors at a 1 % rate once a few have been seen, with the share and onset', () => {
      const timeline = callTimeline(10, 40, (i) =>
        i % 100 === 50
          ? { call: { status: 503, error: 'HTTP 503: overloaded' }, errorClass: 'http-5xx' }
          : null,
      );
      const causes = diagnose(timeline, T0 + 10_000);
      expect(causes.map((c) => c.kind)).toEqual(['server-errors']);
      expect(causes[0].figures.share).toBeCloseTo(0.01, 3);
      expect(causes[0].since).toBe(T0 + 20 + 1_250 - 40);
      expect(causes[0].evidence[1]).toMatch(/^first at /);
    });

    it('names request-timeouts and connection-errors each by their class', () => {
      const timeline = callTimeline(6, 40, (i) =>
        i % 10 === 1
          ? { call: { error: 'RequestTimeout: no complete response within 500 ms' }, errorClass: 'timeout' }
          : i % 10 === 2
            ? { call: { error: 'Error: connect ECONNREFUSED' }, errorClass: 'connect' }
            : null,
      );
      expect(
        diagnose(timeline, T0 + 6_000)
          .map((c) => c.kind)
          .sort(),
      ).toEqual(['connection-errors', 'request-timeouts']);
    });

    it('names two 5xx that cost the SLO-1 budget, but not two timeouts, nor a share within it', () => {
      // 2 of 320 answers 5xx: availability 99.4 % < 99.5 %; the target said so itself.
      const [cause, ...rest] = diagnose(
        callTimeline(8, 40, (i) =>
          i === 7 || i === 99 ? { call: { status: 500 }, errorClass: 'http-5xx' } : null,
        ),
        T0 + 8_000,
      );
      expect(rest).toEqual([]);
      expect(cause).toMatchObject({ kind: 'server-errors', figures: { failed: 2, calls: 320 } });
      // Two timeouts are the client's judgement: under errorMinCount, not named.
      expect(
        diagnose(
          callTimeline(8, 40, (i) =>
            i === 7 || i === 99
              ? {
                  call: { error: 'RequestTimeout: no complete response within 500 ms' },
                  errorClass: 'timeout',
                }
              : null,
          ),
          T0 + 8_000,
        ),
      ).toEqual([]);
      expect(
        diagnose(
          callTimeline(10, 100, (i) =>
            i % 250 === 0 ? { call: { status: 500 }, errorClass: 'http-5xx' } : null,
          ),
          T0 + 10_000,
        ),
      ).toEqual([]);
    });

    it('reads the wait a 429 asks for from a Retry-After header text or OpenAI’s message', () => {
      expect(retryAfterSeconds('Retry-After: 7')).toBe(7);
      expect(retryAfterSeconds('Please try again in 20ms.')).toBe(0.02);
      expect(retryAfterSeconds('Please try again in 1.5s.')).toBe(1.5);
      expect(retryAfterSeconds('quota exceeded')).toBeNull();
    });
  });

  describe('causes seen during warm-up', () => {
    it('names a prompt explosion whose signals all fell in the first 2 s', () => {
      const timeline = new RunTimeline();
      for (const w of windows(4, () => ({ e2e: 100, ttft: 20, itl: 10 }))) timeline.addWindow(w);
      for (let k = 0; k < 3; k++)
        timeline.addDetector({
          ...envelope('c', 'r', T0 + 500 + 300 * k),
          kind: 'detector',
          detector: 'prompt-explosion',
          requestId: `r-${k}`,
          severity: 'critical',
          message: 'nested prompt depth 7 > 5',
          figures: { depth: 7 },
        } as DetectorSignal);
      const now = T0 + 1_800;
      expect(diagnose(timeline, now).map((c) => c.kind)).toEqual(['prompt-explosion']);
    });

    it('names errors of the warm-up too', () => {
      const timeline = callTimeline(2, 40, (i) =>
        i % 5 === 0
          ? { call: { status: 502, error: 'HTTP 502: Bad gateway.' }, errorClass: 'http-5xx' }
          : null,
      );
      expect(diagnose(timeline, T0 + 1_900).map((c) => c.kind)).toEqual(['server-errors']);
    });
  });

  describe('capacity-saturation', () => {
    /** 10 s at a standing queue from `queueFrom` s; KV at `kv`; ITL `itl(s)`. */
    function saturated(queueFrom: number, kv = 0.11, itl: (s: number) => number = () => 17) {
      const timeline = new RunTimeline();
      for (const w of windows(10, (s) =>
        s >= queueFrom ? { e2e: 2_400, ttft: 1_300, itl: itl(s) } : { e2e: 600, ttft: 80, itl: itl(s) },
      ))
        timeline.addWindow(w);
      for (let at = T0 + 250; at <= T0 + 10_000; at += 500) {
        const queued = at >= T0 + queueFrom * 1_000;
        timeline.addGpu(
          gpu(at, {
            requests_waiting: queued ? 32 : 0,
            requests_running: queued ? 32 : 20,
            kv_cache_usage_ratio: kv,
          }),
        );
      }
      // 64 streams in flight once queued, each request 2.4 s long.
      const digests: RecordDigest[] = [];
      for (let at = T0 + 2_400; at <= T0 + 10_000; at += 2_400 / 64)
        digests.push(digest(at, {}, null, 2_400));
      timeline.addDigests(digests);
      return timeline;
    }

    it('names it when requests queue, TTFT climbs, decode holds and KV is not the limit, with where it started', () => {
      const causes = diagnose(saturated(6), T0 + 10_000);
      expect(causes[0]).toMatchObject({
        kind: 'capacity-saturation',
        since: T0 + 6_250,
        figures: { waitingMean: 32, runningMax: 32, inFlightAtOnset: 64, kvUsagePeak: 0.11 },
      });
      expect(causes[0].confidence).toBeGreaterThanOrEqual(0.7);
      expect(causes[0].advice.join(' ')).toMatch(/fewer streams.*batch of 32/);
      expect(causes[0].advice.join(' ')).toMatch(/replicas/);
      expect(causes[0].advice.join(' ')).toMatch(/--max-num-seqs/);
    });

    it('names it from the start when the run was over capacity all along (no baseline jump)', () => {
      expect(diagnose(saturated(0), T0 + 10_000)[0]).toMatchObject({
        kind: 'capacity-saturation',
        since: T0 + 250,
      });
    });

    it('leaves a full KV cache to kv-cache-pressure and a decode jump to engine-step-slowdown', () => {
      expect(diagnose(saturated(6, 0.97), T0 + 10_000).map((c) => c.kind)).toEqual(['kv-cache-pressure']);
      const slower = diagnose(
        saturated(6, 0.11, (s) => (s >= 6 ? 60 : 17)),
        T0 + 10_000,
      ).map((c) => c.kind);
      expect(slower).toContain('engine-step-slowdown');
      expect(slower).not.toContain('capacity-saturation');
    });

    it('names nothing for a queue that only bursts (a starved target), and marks its thresholds as set on the simulator', () => {
      const bursts = new RunTimeline();
      for (const w of windows(10, () => ({ e2e: 2_400, ttft: 1_300, itl: 17 }))) bursts.addWindow(w);
      for (let at = T0 + 250; at <= T0 + 10_000; at += 500)
        bursts.addGpu(
          gpu(at, {
            requests_waiting: at % 1_000 === 250 ? 4 : 0,
            requests_running: 2,
            kv_cache_usage_ratio: 0.1,
          }),
        );
      expect(diagnose(bursts, T0 + 10_000).map((c) => c.kind)).not.toContain('capacity-saturation');
      const [cause] = diagnose(saturated(6), T0 + 10_000);
      expect(cause.thresholds?.map((t) => t.source)).toEqual(['simulator', 'simulator']);
    });

    /** Over capacity from the first second, TTFT modest throughout: queued for `share` of each request, by the server's clock. */
    function overCapacityAllAlong(share: number | null) {
      const timeline = new RunTimeline();
      for (const w of windows(10, () => ({ e2e: 600, ttft: 150, itl: 17 }))) timeline.addWindow(w);
      let n = 0;
      for (let at = T0 + 250; at <= T0 + 10_000; at += 500, n++)
        timeline.addGpu(
          gpu(at, {
            requests_waiting: 16,
            requests_running: 32,
            kv_cache_usage_ratio: 0.2,
            // Cumulative histograms: 40 requests finish per scrape, 0.6 s each.
            ...(share === null
              ? {}
              : {
                  e2e_sum_s: n * 40 * 0.6,
                  e2e_count_total: n * 40,
                  queue_sum_s: n * 40 * 0.6 * share,
                  queue_count_total: n * 40,
                }),
          }),
        );
      return diagnose(timeline, T0 + 10_000);
    }

    it('names a run over capacity from its first second when the server says requests spent a third of their time queued', () => {
      const [cause] = overCapacityAllAlong(0.33).filter((c) => c.kind === 'capacity-saturation');
      expect(cause).toBeDefined();
      expect(cause.figures!.serverQueueShare).toBeCloseTo(0.33, 5);
      expect(cause.evidence.join(' ')).toMatch(/33 % of each request's time spent queued/);
      expect(cause.thresholds?.map((t) => t.name)).toContain(
        "share of the server's request time spent queued",
      );
    });

    it('does not name that run when the queue cost requests little, or the server reports no queue time', () => {
      expect(overCapacityAllAlong(0.05).map((c) => c.kind)).not.toContain('capacity-saturation');
      expect(overCapacityAllAlong(null).map((c) => c.kind)).not.toContain('capacity-saturation');
    });

    it('names nothing without a standing queue', () => {
      const timeline = new RunTimeline();
      for (const w of windows(10, () => ({ e2e: 600, ttft: 80, itl: 17 }))) timeline.addWindow(w);
      for (let at = T0 + 250; at <= T0 + 10_000; at += 500)
        timeline.addGpu(
          gpu(at, {
            requests_waiting: at % 1_000 === 250 ? 1 : 0,
            requests_running: 30,
            kv_cache_usage_ratio: 0.2,
          }),
        );
      expect(diagnose(timeline, T0 + 10_000)).toEqual([]);
    });
  });
});

describe('engine-step-slowdown against the server’s own inter-token latency', () => {
  /** ITL 10 ms, 40 ms from 6 s; the server's ITL histogram grows by `serverMs(s)` per token. */
  function slower(serverMs: (s: number) => number) {
    const timeline = new RunTimeline();
    for (const w of windows(10, (s) =>
      s >= 6 ? { e2e: 1_500, ttft: 50, itl: 40 } : { e2e: 400, ttft: 50, itl: 10 },
    ))
      timeline.addWindow(w);
    let sum = 0;
    let count = 0;
    for (let at = T0 + 250; at <= T0 + 10_000; at += 500) {
      count += 100;
      sum += (100 * serverMs(Math.floor((at - T0) / 1_000))) / 1_000;
      timeline.addGpu(
        gpu(at, { itl_sum_s: sum, itl_count_total: count, requests_waiting: 0, kv_cache_usage_ratio: 0.1 }),
      );
    }
    return diagnose(timeline, T0 + 10_000);
  }

  it('names the slowdown when the server’s ITL jumped too, with its figures', () => {
    const [cause] = slower((s) => (s >= 6 ? 40 : 10));
    expect(cause).toMatchObject({
      kind: 'engine-step-slowdown',
      figures: { serverItlMs: 40, serverItlBaselineMs: 10 },
    });
  });

  it('names nothing when only the client saw longer gaps (the server’s ITL held)', () => {
    expect(slower(() => 10).map((c) => c.kind)).not.toContain('engine-step-slowdown');
  });
});

describe('a fault that began inside the span after warm-up', () => {
  it('is judged against the quietest span of the run so far, warm-up included', () => {
    // ITL 10 ms until 2.5 s, then 40 ms: the span after warm-up (2-4 s) is mostly the fault.
    const timeline = new RunTimeline();
    for (const w of windows(10, (s) =>
      s >= 2 ? { e2e: 1_500, ttft: 50, itl: 40 } : { e2e: 400, ttft: 50, itl: 10 },
    ))
      timeline.addWindow(w);
    const [cause] = diagnose(timeline, T0 + 8_000);
    expect(cause).toMatchObject({
      kind: 'engine-step-slowdown',
      figures: { itlP50Ms: expect.closeTo(40, 0), itlP50BaselineMs: expect.closeTo(10, 0) },
    });
  });
});

describe('stalls beside a full KV cache', () => {
  it('names kv-cache-pressure alone: preempted sequences pause their streams', () => {
    const timeline = new RunTimeline();
    for (const w of windows(10, () => ({ e2e: 400, ttft: 50, itl: 10 }))) timeline.addWindow(w);
    // Streams with 10 ms gaps, from 6 s half of them paused 900 ms mid-stream.
    const digests: RecordDigest[] = [];
    for (let at = T0 + 100; at <= T0 + 10_000; at += 100)
      digests.push({
        ...digest(at),
        gapMedianMs: 10,
        gapMaxMs: at > T0 + 6_000 && at % 200 === 0 ? 900 : 12,
      });
    timeline.addDigests(digests);
    const stalls = diagnose(timeline, T0 + 10_000).map((c) => c.kind);
    for (let at = T0 + 250; at <= T0 + 10_000; at += 500)
      timeline.addGpu(
        gpu(at, {
          kv_cache_usage_ratio: at > T0 + 6_000 ? 0.98 : 0.3,
          requests_waiting: at > T0 + 6_000 ? 4 : 0,
          requests_running: 8,
        }),
      );
    expect(stalls).toEqual(['stream-stall']);
    expect(diagnose(timeline, T0 + 10_000).map((c) => c.kind)).toEqual(['kv-cache-pressure']);
  });
});

describe('causes timed by the client, while the client was limited', () => {
  const health = (cpuBusy: number, loopUtilization = 0.3, loopDelayP99Ms = 12) => ({
    loopDelayP99Ms,
    loopDelayMaxMs: 20,
    loopUtilization,
    cpuBusy,
    sendLateP99Ms: 1,
    inFlightMax: 4,
    concurrency: 4,
    e2eP50Ms: 400,
    recordBudgetPerSec: 100,
  });
  /** ITL jumps x4 at 6 s; the generator's health of each second from `healthOf`. */
  function slowdown(healthOf: (s: number) => ReturnType<typeof health>) {
    const timeline = new RunTimeline();
    for (const w of windows(10, (s) =>
      s >= 6 ? { e2e: 1_500, ttft: 50, itl: 40 } : { e2e: 400, ttft: 50, itl: 10 },
    ))
      timeline.addWindow({ ...w, health: healthOf(w.seq) });
    return timeline;
  }

  it('names the slowdown when the generator and its host kept up', () => {
    expect(
      diagnose(
        slowdown(() => health(0.6)),
        T0 + 10_000,
      ).map((c) => c.kind),
    ).toEqual(['engine-step-slowdown']);
  });

  it('names it on a busy host whose threads still ran on time', () => {
    expect(
      diagnose(
        slowdown(() => health(1)),
        T0 + 10_000,
      ).map((c) => c.kind),
    ).toEqual(['engine-step-slowdown']);
  });

  it('claims no latency cause on a span with a starved host or a client-bound window', () => {
    expect(
      diagnose(
        slowdown((s) => health(s === 8 ? 0.99 : 0.6, 0.3, 80)),
        T0 + 10_000,
      ),
    ).toEqual([]);
    expect(
      diagnose(
        slowdown((s) => health(0.6, s === 9 ? 0.97 : 0.3)),
        T0 + 10_000,
      ),
    ).toEqual([]);
  });

  it('still names what the target answered (5xx), but not timeouts the client judged', () => {
    const timeline = callTimeline(8, 40, (i) =>
      i % 10 === 1
        ? { call: { status: 503, error: 'HTTP 503: overloaded' }, errorClass: 'http-5xx' }
        : i % 10 === 2
          ? { call: { error: 'RequestTimeout: no complete response within 500 ms' }, errorClass: 'timeout' }
          : null,
    );
    for (const w of windows(8, () => ({ e2e: 40, ttft: 10, itl: 5 })))
      timeline.addWindow({ ...w, health: health(1, 0.3, 120) });
    expect(diagnose(timeline, T0 + 8_000).map((c) => c.kind)).toEqual(['server-errors']);
  });
});

describe('hallucination-rise while a breaker holds the traffic back', () => {
  it('judges the answers before the gap when the recent span has too few', () => {
    const timeline = new RunTimeline();
    const digests: RecordDigest[] = [];
    // Clean answers 0-6 s, every answer risky 6-7 s, then nothing (the LLM breaker opened) to 10.5 s.
    for (let at = T0 + 50; at <= T0 + 7_000; at += 50)
      digests.push({
        ...digest(at),
        riskSegments: at > T0 + 6_000 ? 1 : 0,
        maxWindowEntropyBits: at > T0 + 6_000 ? 4.8 : 2.1,
      });
    timeline.addDigests(digests);
    const causes = diagnose(timeline, T0 + 10_500);
    expect(causes.map((c) => c.kind)).toEqual(['hallucination-rise']);
    expect(causes[0].figures).toMatchObject({ baselineShare: 0 });
  });
});

describe('hallucination-rise judged by significance, not a fixed jump', () => {
  /** Answers every 50 ms to 10 s: risky at `baseShare` until 6 s, then at `share`. */
  const run = (baseShare: number, share: number) => {
    const timeline = new RunTimeline();
    const digests: RecordDigest[] = [];
    let i = 0;
    for (let at = T0 + 50; at <= T0 + 10_000; at += 50, i++) {
      const rate = at > T0 + 6_000 ? share : baseShare;
      const risky = rate > 0 && i % Math.round(1 / rate) === 0;
      digests.push({ ...digest(at), riskSegments: risky ? 1 : 0, maxWindowEntropyBits: risky ? 4.8 : 2.1 });
    }
    timeline.addDigests(digests);
    return diagnose(timeline, T0 + 10_000).filter((c) => c.kind === 'hallucination-rise');
  };

  it('names a quarter of the answers turning risky over a clean baseline (under the old fixed rise of 0.3)', () => {
    const [cause] = run(0, 0.25);
    expect(cause).toBeDefined();
    expect(cause.figures).toMatchObject({ baselineShare: 0 });
    expect(cause.figures!.z).toBeGreaterThanOrEqual(3);
    expect(cause.thresholds?.find((t) => t.name.startsWith('rise'))?.source).toBe('statistics');
  });

  it('does not name the same rise over a baseline that was already that noisy', () => {
    expect(run(0.125, 0.25)).toEqual([]);
  });

  it('does not name a clean run', () => {
    expect(run(0, 0)).toEqual([]);
  });
});

describe(twoProportionZ.name, () => {
  it('is the pooled one-sided z, and 0 with nothing to compare', () => {
    // 6/30 against 0/50: pooled 0.075, se 0.0608.
    expect(twoProportionZ(6, 30, 0, 50)).toBeCloseTo(3.29, 2);
    expect(twoProportionZ(0, 30, 0, 50)).toBe(0);
    expect(twoProportionZ(30, 30, 50, 50)).toBe(0);
    expect(twoProportionZ(1, 0, 0, 10)).toBe(0);
    expect(twoProportionZ(0, 10, 5, 10)).toBeLessThan(0);
  });
});
