import type { RunProgress } from '@fathom/contracts';
import { ProgressReporter, type ProgressOutput } from './progress.reporter';
import { clock, formatProgressLine } from './run-progress.format';

function progress(requests: number, over: Partial<RunProgress> = {}): RunProgress {
  return {
    runId: 'r',
    status: 'running',
    startedAt: 0,
    elapsedMs: requests * 100,
    remainingMs: 10_000 - requests * 100,
    requests,
    errors: 1,
    errorClasses: { timeout: 1 },
    requestsPerSec: 12.5,
    e2e: { p50Ms: 820, p99Ms: 1620 },
    ttft: { p50Ms: 87, p99Ms: 843.8 },
    tier: 'SLO-1',
    openBreakers: [{ breaker: 'sim/llm/node-1', state: 'open' }],
    validity: { valid: false, reasons: ['generator-bottleneck'], late: 3, dropped: 4, behindShare: 0.07 },
    ...over,
  };
}

class Recorder implements ProgressOutput {
  readonly chunks: string[] = [];
  constructor(
    readonly isTTY: boolean,
    readonly columns?: number,
  ) {}
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return true;
  }
  async until(n: number): Promise<void> {
    for (let i = 0; i < 400 && this.chunks.length < n; i++) await new Promise((r) => setTimeout(r, 5));
    expect(this.chunks.length).toBeGreaterThanOrEqual(n);
  }
}

describe(ProgressReporter.name, () => {
  it('redraws one block in place on a terminal and erases it when stopped', async () => {
    const output = new Recorder(true, 400);
    let n = 0;
    const sut = new ProgressReporter({
      output,
      fetch: async () => progress(++n * 10),
      ttyIntervalMs: 5,
    }).start();
    await output.until(3);
    await sut.stop();

    const [first, second] = output.chunks;
    expect(first).not.toContain('\x1b[');
    expect(first.split('\n')).toHaveLength(4); // three lines and the final newline
    expect(first).toContain(
      'running 0:01 / 0:10 (9 s left)  12.5 req/s  requests 10  errors 1 (10.00 %): timeout 1',
    );
    expect(first).toContain('e2e  P50 820 ms  P99 1.62 s    TTFT  P50 87.0 ms  P99 844 ms');
    expect(first).toContain(
      'tier SLO-1  breakers: sim/llm/node-1 open  validity: generator-bottleneck (late 3, dropped 4, 7.0 % behind)',
    );
    expect(second.startsWith('\x1b[3F\x1b[J')).toBe(true);
    expect(second).toContain('requests 20');
    expect(output.chunks.at(-1)).toBe('\x1b[3F\x1b[J');
  });

  it('cuts lines to the terminal width so the redraw count holds', async () => {
    const output = new Recorder(true, 40);
    const sut = new ProgressReporter({ output, fetch: async () => progress(10), ttyIntervalMs: 5 }).start();
    await output.until(1);
    await sut.stop();
    for (const line of output.chunks[0].split('\n')) expect(line.length).toBeLessThanOrEqual(39);
  });

  it('writes one plain line per period when the output is not a terminal', async () => {
    const output = new Recorder(false);
    let n = 0;
    const sut = new ProgressReporter({
      output,
      fetch: async () => progress(++n * 10),
      ttyIntervalMs: 1,
      lineIntervalMs: 20,
    }).start();
    await output.until(2);
    await sut.stop();

    expect(output.chunks.join('')).not.toContain('\x1b');
    for (const chunk of output.chunks) expect(chunk).toMatch(/^progress [^\n]+\n$/);
    expect(output.chunks[0]).toBe(
      'progress 0:01 / 0:10 (9 s left) running: 12.5 req/s, requests 10, errors 1 (10.00 %): timeout 1; ' +
        'e2e P50 820 ms P99 1.62 s; TTFT P50 87.0 ms P99 844 ms; tier SLO-1; breakers: sim/llm/node-1 open; ' +
        'validity: generator-bottleneck (late 3, dropped 4, 7.0 % behind)\n',
    );
  });

  it('says once why progress is unavailable and carries on polling', async () => {
    const output = new Recorder(false);
    let n = 0;
    const sut = new ProgressReporter({
      output,
      fetch: async () => {
        n++;
        if (n <= 3) throw new Error('connect ECONNREFUSED');
        return progress(10);
      },
      lineIntervalMs: 5,
    }).start();
    await output.until(2);
    await sut.stop();
    expect(output.chunks[0]).toBe('progress unavailable: connect ECONNREFUSED\n');
    expect(output.chunks[1]).toMatch(/^progress 0:01/);
  });

  it('shows nothing before the run is known', async () => {
    const output = new Recorder(true);
    let polls = 0;
    const sut = new ProgressReporter({
      output,
      fetch: async () => {
        polls++;
        return null;
      },
      ttyIntervalMs: 2,
    }).start();
    while (polls < 3) await new Promise((r) => setTimeout(r, 2));
    await sut.stop();
    expect(output.chunks).toEqual([]);
  });
});

describe(clock.name, () => {
  it('writes m:ss, and h:mm:ss from an hour on', () => {
    expect(clock(0)).toBe('0:00');
    expect(clock(65_400)).toBe('1:05');
    expect(clock(3_725_000)).toBe('1:02:05');
  });
});

describe(formatProgressLine.name, () => {
  it('prints latencies under 1 ms to the microsecond, as the summary does', () => {
    const line = formatProgressLine(
      progress(10, { e2e: { p50Ms: 0.078, p99Ms: 2.7 }, ttft: { p50Ms: null, p99Ms: null } }),
    );
    expect(line).toContain('e2e P50 0.078 ms P99 2.7 ms; TTFT P50 - P99 -');
  });
});
