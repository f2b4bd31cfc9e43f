/**
 * Does the semantic monitor keep up with the load-generator? Measured end to end, in one run:
 *
 * 1. co-located (the embedded topology of `fathom up`): the real load-generator and the real
 *    SemanticMonitorService in ONE Nest app on the in-memory bus, STREAMS concurrent streams
 *    against the simulated target (its own process, logprobs with 5 alternatives on every token,
 *    a synthetic dataset so responses differ and the embedding cache does not flatter).
 *    Production: RequestRecords the generator publishes (counted at `bus.publish`); consumption:
 *    the monitor's token-stats signals, one per assessed record (counted at `bus.publishMany`,
 *    what it already publishes); lag = published - assessed, sampled every 100 ms.
 *    The monitor's CPU here is timed, not read: its consume pipeline (decode + zod validation +
 *    assessment + signal encoding; validation and assessment run in 2 ms slices since the
 *    monitor yields, so this is the wall time of a message, other tasks' slices included: an
 *    upper bound) and its embedding calls (wall: the round trip to the embedding worker thread,
 *    which loads the model and embeds off this event loop). The event-loop delay (ELD) of the
 *    process is the stall every token timestamp of the co-located generator can suffer.
 * 2. own process: the telemetry published in (1) is recorded and replayed, bytes as published,
 *    into a process that runs only the semantic-monitor: `paced` at the recorded times (the
 *    measured production rate), `flat` all at once (capacity), and `flat` with embeddings off
 *    (what entropy and the rest cost without the sampled embeddings). CPU = process.cpuUsage.
 *
 * Headroom = own-process capacity / co-located production rate. Prints figures; never fails.
 * Run: node -r ./bench/ts-register.js bench/semantic-keepup.bench.ts [SECONDS=20] [STREAMS=200] [TIME_SCALE=1]
 * (TIME_SCALE < 1 runs the simulated model faster than real time: more telemetry per second.)
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ConsumePipeline, createBus, decodeEvent, type Bus } from '@fathom/bus';
import {
  perRecordSignals,
  CampaignSpecSchema,
  Topics,
  envelope,
  type RequestTelemetry,
  type RunLifecycle,
  type SemanticSignal,
} from '@fathom/contracts';
import { AdaptiveSampleRate, CachedEmbedder } from '@fathom/semantic';
import { consumerGroup } from '@fathom/contracts';
import { createFathomApp } from '@fathom/runtime';
import { startSimProcess } from '../libs/load/src/__fixtures__/sim-process';

const MONITOR_TELEMETRY_GROUP = consumerGroup('semantic-monitor', Topics.requestTelemetry);

/** Counters the bench keeps by watching the bus and the monitor's collaborators (no service edits). */
class MonitorProbe {
  recordsPublished = 0;
  tokensPublished = 0; // logprob entries (the tokens the monitor computes entropy for)
  tokenEventsPublished = 0; // SSE content chunks the generator received
  recordsAssessed = 0;
  tokensAssessed = 0;
  firstAssessedAt: number | null = null;
  lastAssessedAt: number | null = null;
  consumeMs = 0;
  embedCalls = 0;
  embeddedTexts = 0;
  embedMs = 0;
  /** Longest single embedding call after the first (the first loads the model). */
  embedMaxMs = 0;
  embedFirstMs: number | null = null;
  /** Longest consume of one telemetry message, wall (up to 200 records; sliced, so not one stall). */
  consumeMaxMs = 0;
  /** Event-loop delay of this process (ms), the stall every other task on the loop sees. */
  readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });
  readonly rates: { atMs: number; cpuPct: number; rate: number }[] = [];
  readonly lag: { atMs: number; lag: number }[] = [];
  readonly recorded: { atMs: number; event: RequestTelemetry }[] = [];
  private lagTimer: NodeJS.Timeout | null = null;

  constructor(readonly t0 = performance.now()) {}

  now(): number {
    return performance.now() - this.t0;
  }

  /** Counts published records (and keeps them for the replay) and the monitor's token-stats signals. */
  watchBus(bus: Bus, record: boolean): void {
    const publish = bus.publish.bind(bus);
    const publishMany = bus.publishMany.bind(bus);
    bus.publish = (async (topic, event, options) => {
      if (topic.name === Topics.requestTelemetry.name) this.onTelemetry(event as RequestTelemetry, record);
      return publish(topic, event, options);
    }) as Bus['publish'];
    bus.publishMany = (async (topic, events) => {
      if (topic.name === Topics.semanticSignal.name)
        this.onSignals(events as unknown as readonly SemanticSignal[]);
      return publishMany(topic, events);
    }) as Bus['publishMany'];
  }

  countTelemetry(event: RequestTelemetry): void {
    this.recordsPublished += event.records.length;
    for (const r of event.records) {
      this.tokensPublished += r.logprobs?.length ?? 0;
      this.tokenEventsPublished += r.chunkOffsetsMs.length;
    }
  }

  private onTelemetry(event: RequestTelemetry, record: boolean): void {
    this.countTelemetry(event);
    if (record) this.recorded.push({ atMs: this.now(), event });
  }

  private onSignals(signals: readonly SemanticSignal[]): void {
    let n = 0;
    for (const s of signals.flatMap(perRecordSignals)) {
      if (s.kind !== 'token-stats') continue;
      n++;
      if (s.assessment === 'ok') this.tokensAssessed += s.outputTokens;
    }
    if (n === 0) return;
    const at = this.now();
    this.recordsAssessed += n;
    this.firstAssessedAt ??= at;
    this.lastAssessedAt = at;
  }

  /**
   * Times the monitor's consume pipeline and its embedding calls, and logs the adaptive sample
   * rate each time the monitor adjusts it (once a second, from the host's CPU reading).
   */
  watchMonitor(): void {
    const consume = ConsumePipeline.prototype.process;
    const embed = CachedEmbedder.prototype.embed;
    const adjust = AdaptiveSampleRate.prototype.adjust;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const probe = this;
    ConsumePipeline.prototype.process = async function timedProcess(this: ConsumePipeline<never>, message) {
      const group = (this as unknown as { options: { group: string } }).options.group;
      if (group !== MONITOR_TELEMETRY_GROUP) return consume.call(this, message);
      const started = performance.now();
      try {
        return await consume.call(this, message);
      } finally {
        const ms = performance.now() - started;
        probe.consumeMs += ms;
        probe.consumeMaxMs = Math.max(probe.consumeMaxMs, ms);
      }
    };
    CachedEmbedder.prototype.embed = async function timedEmbed(this: CachedEmbedder, texts) {
      const started = performance.now();
      const out = await embed.call(this, texts);
      const ms = performance.now() - started;
      probe.embedMs += ms;
      if (probe.embedFirstMs === null) probe.embedFirstMs = ms;
      else probe.embedMaxMs = Math.max(probe.embedMaxMs, ms);
      probe.embedCalls++;
      probe.embeddedTexts += texts.length;
      return out;
    };
    AdaptiveSampleRate.prototype.adjust = function loggedAdjust(this: AdaptiveSampleRate, cpuBusyPct) {
      const rate = adjust.call(this, cpuBusyPct);
      probe.rates.push({ atMs: probe.now(), cpuPct: cpuBusyPct, rate });
      return rate;
    };
  }

  startLagSampling(): void {
    this.loopDelay.enable();
    this.embedMaxMs = 0;
    this.consumeMaxMs = 0;
    this.lagTimer = setInterval(
      () => this.lag.push({ atMs: this.now(), lag: this.recordsPublished - this.recordsAssessed }),
      100,
    );
  }

  stopLagSampling(): void {
    if (this.lagTimer) clearInterval(this.lagTimer);
    this.loopDelay.disable();
    this.lag.push({ atMs: this.now(), lag: this.recordsPublished - this.recordsAssessed });
  }

  loopDelayMs(): { p50: number; p99: number; max: number } {
    const h = this.loopDelay;
    return { p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6 };
  }

  maxLag(fromMs = 0, toMs = Infinity): number {
    return Math.max(0, ...this.lag.filter((l) => l.atMs >= fromMs && l.atMs <= toMs).map((l) => l.lag));
  }

  lagAt(atMs: number): number {
    let last = 0;
    for (const l of this.lag) if (l.atMs <= atMs) last = l.lag;
    return last;
  }

  async until(done: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!done()) {
      if (performance.now() > deadline) return false;
      await sleep(20);
    }
    return true;
  }
}

// ---------------------------------------------------------------------------------------------
// 1. co-located: load-generator + semantic-monitor in one process

interface ColocatedResult {
  readonly generatorS: number;
  readonly produced: { records: number; tokens: number; tokenEvents: number };
  readonly assessed: { records: number; tokens: number };
  readonly consumeS: number;
  readonly drainAfterGeneratorMs: number | null;
  readonly lagMax: number;
  readonly lagAtGeneratorEnd: number;
  readonly lagEnd: number;
  readonly lagEverySecond: number[];
  readonly processCpuS: number;
  readonly monitorConsumeCpuS: number;
  readonly monitorEmbedWallS: number;
  readonly embeddedTexts: number;
  readonly embedMaxMs: number;
  readonly embedFirstMs: number | null;
  readonly consumeMaxMs: number;
  readonly loopDelayMs: { p50: number; p99: number; max: number };
  readonly sampleRates: number[];
  readonly errors: number;
  readonly recording: string;
  readonly recordedMessages: number;
  readonly decodeMsOffline: number;
}

async function colocated(
  seconds: number,
  streams: number,
  timeScale: number,
  dir: string,
): Promise<ColocatedResult> {
  const sim = await startSimProcess({
    timeScale,
    // 200 streams decode side by side (vLLM's default max_num_seqs is 256), none wait in a queue.
    engine: { maxNumSeqs: Math.max(256, streams), maxNumBatchedTokens: 16384 },
  });
  const bus = createBus({ kind: 'memory' });
  const probe = new MonitorProbe();
  probe.watchBus(bus, true);
  probe.watchMonitor();
  process.env.FATHOM_SEMANTIC_SETTLE_MS = '1000';
  const app = await createFathomApp({
    services: ['load-generator', 'semantic-monitor'],
    bus,
    port: 0,
    logLevels: ['error', 'warn'],
  });
  const lifecycle: { atMs: number; event: RunLifecycle }[] = [];
  await bus.subscribe(Topics.runLifecycle, { group: 'bench-lifecycle' }, (e) => {
    lifecycle.push({ atMs: probe.now(), event: e });
  });
  const spec = CampaignSpecSchema.parse({
    name: 'semantic keep-up',
    target: { baseUrl: `${sim.url}/v1` },
    scenario: {
      type: 'chat',
      model: 'fathom-sim-8b',
      dataset: {
        type: 'synthetic',
        seed: 7,
        inputTokens: { mean: 48, stdev: 16, min: 8, max: 128 },
        outputTokens: { mean: 64, stdev: 24, min: 8, max: 160 },
        size: 5000,
      },
      maxTokens: 64,
      logprobs: true,
      topLogprobs: 5,
    },
    load: { concurrency: streams, durationMs: seconds * 1000, recordSampleRate: 1 },
    slo: { p99Ms: 60_000 },
  });
  const campaignId = 'bench-keepup';
  const runId = `keepup-${Date.now()}`;
  const command = {
    ...envelope(campaignId, runId),
    kind: 'start-shard' as const,
    shard: { index: 0, count: 1 },
    spec,
    trigger: 'cli' as const,
  };
  const cpu0 = process.cpuUsage();
  probe.startLagSampling();
  await bus.publishMany(Topics.runShard, [command]);
  const ended = () => lifecycle.some((l) => l.event.phase !== 'shard-started');
  await probe.until(ended, seconds * 1000 + 60_000);
  const started = lifecycle.find((l) => l.event.phase === 'shard-started');
  const finished = lifecycle.find((l) => l.event.phase !== 'shard-started');
  const generatorEndMs = finished?.atMs ?? probe.now();
  const drained = await probe.until(() => probe.recordsAssessed >= probe.recordsPublished, 60_000);
  const drainAfterGeneratorMs = drained ? Math.max(0, (probe.lastAssessedAt ?? 0) - generatorEndMs) : null;
  probe.stopLagSampling();
  const used = process.cpuUsage(cpu0);
  await sleep(500); // let an embedding batch in flight finish before the app closes
  await app.close();
  await bus.close();
  await sim.close();

  // Record the telemetry as the monitor received it (the bus's encoding: JSON of the parsed
  // event), one message a line with its publish time, for the own-process replay.
  const recording = join(dir, 'telemetry.ndjson');
  const firstAt = probe.recorded[0]?.atMs ?? 0;
  const lines: string[] = [JSON.stringify(command)];
  let decodeMsOffline = 0;
  for (const { atMs, event } of probe.recorded) {
    const value = JSON.stringify(Topics.requestTelemetry.schema.parse(event));
    const t = performance.now();
    decodeEvent(Topics.requestTelemetry.schema, Buffer.from(value, 'utf8'));
    decodeMsOffline += performance.now() - t;
    lines.push(`${(atMs - firstAt).toFixed(1)}\t${value}`);
  }
  writeFileSync(recording, lines.join('\n'));

  const lagEverySecond: number[] = [];
  for (let s = 1; s * 1000 <= probe.now(); s++) lagEverySecond.push(probe.lagAt(s * 1000));
  const startMs = started?.atMs ?? 0;
  return {
    generatorS: (generatorEndMs - startMs) / 1000,
    produced: {
      records: probe.recordsPublished,
      tokens: probe.tokensPublished,
      tokenEvents: probe.tokenEventsPublished,
    },
    assessed: { records: probe.recordsAssessed, tokens: probe.tokensAssessed },
    consumeS: ((probe.lastAssessedAt ?? 0) - (probe.firstAssessedAt ?? 0)) / 1000,
    drainAfterGeneratorMs,
    lagMax: probe.maxLag(),
    lagAtGeneratorEnd: probe.lagAt(generatorEndMs),
    lagEnd: probe.recordsPublished - probe.recordsAssessed,
    lagEverySecond,
    processCpuS: (used.user + used.system) / 1e6,
    monitorConsumeCpuS: probe.consumeMs / 1000,
    monitorEmbedWallS: probe.embedMs / 1000,
    embeddedTexts: probe.embeddedTexts,
    embedMaxMs: probe.embedMaxMs,
    embedFirstMs: probe.embedFirstMs,
    consumeMaxMs: probe.consumeMaxMs,
    loopDelayMs: probe.loopDelayMs(),
    sampleRates: probe.rates.map((r) => r.rate),
    errors: finished?.event.counts.errors ?? 0,
    recording,
    recordedMessages: probe.recorded.length,
    decodeMsOffline,
  };
}

// ---------------------------------------------------------------------------------------------
// 2. own process: the semantic-monitor alone, fed the recorded telemetry

type ReplayMode = 'paced' | 'flat' | 'flat-no-embed';

interface ReplayResult {
  readonly mode: ReplayMode;
  readonly records: number;
  readonly tokens: number;
  readonly wallS: number;
  readonly publishS: number;
  readonly cpuS: number;
  readonly cpuWallS: number;
  readonly consumeCpuS: number;
  readonly embeddedTexts: number;
  readonly embedWallS: number;
  readonly embedMaxMs: number;
  readonly embedFirstMs: number | null;
  readonly consumeMaxMs: number;
  readonly loopDelayMs: { p50: number; p99: number; max: number };
  readonly lagMax: number;
  readonly lagEnd: number;
  readonly sampleRates: number[];
  readonly hostCpuPct: number[];
  readonly drained: boolean;
}

async function replayChild(mode: ReplayMode, recording: string): Promise<void> {
  if (mode === 'flat-no-embed') process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
  const [commandLine, ...messageLines] = readFileSync(recording, 'utf8').split('\n');
  const messages = messageLines.map((line) => {
    const tab = line.indexOf('\t');
    return { atMs: Number(line.slice(0, tab)), value: Buffer.from(line.slice(tab + 1), 'utf8') };
  });
  const bus = createBus({ kind: 'memory' });
  const probe = new MonitorProbe();
  probe.watchBus(bus, false);
  probe.watchMonitor();
  const app = await createFathomApp({
    services: ['semantic-monitor'],
    bus,
    port: 0,
    logLevels: ['error', 'warn'],
  });
  await bus.publishRaw(Topics.runShard.name, commandLine);

  // Warm-up outside the measurement: JIT, and the embedder's model load (the first sample).
  const warm = messages.slice(0, Math.min(10, messages.length)).map((m) => {
    const event = JSON.parse(m.value.toString('utf8')) as RequestTelemetry;
    return { ...event, id: `${event.id}-warm`, runId: `${event.runId}-warm` };
  });
  for (const event of warm) await bus.publish(Topics.requestTelemetry, event);
  await probe.until(() => probe.recordsAssessed >= probe.recordsPublished, 30_000);
  if (mode !== 'flat-no-embed') await probe.until(() => probe.embedCalls > 0, 30_000);
  await sleep(1500);

  const base = { ...probe };
  const parsed = messages.map((m) => JSON.parse(m.value.toString('utf8')) as RequestTelemetry);
  const cpu0 = process.cpuUsage();
  const t0 = probe.now();
  probe.startLagSampling();
  if (mode === 'paced') {
    // Each message at its recorded offset: the co-located run's production rate, burst for burst.
    for (let i = 0; i < messages.length; i++) {
      const wait = t0 + messages[i].atMs - probe.now();
      if (wait > 1) await sleep(wait);
      probe.countTelemetry(parsed[i]);
      await bus.publishRaw(
        Topics.requestTelemetry.name,
        messages[i].value,
        `${parsed[i].runId}/${parsed[i].id}`,
      );
    }
  } else {
    for (let i = 0; i < messages.length; i++) {
      probe.countTelemetry(parsed[i]);
      await bus.publishRaw(
        Topics.requestTelemetry.name,
        messages[i].value,
        `${parsed[i].runId}/${parsed[i].id}`,
      );
    }
  }
  const publishS = (probe.now() - t0) / 1000;
  const drained = await probe.until(() => probe.recordsAssessed >= probe.recordsPublished, 120_000);
  const wallS = ((probe.lastAssessedAt ?? probe.now()) - t0) / 1000;
  // CPU over the same span as its own wall clock: a synchronous embedding batch can hold the
  // loop past the last assessment, and the CPU it burns then belongs to that longer span.
  const used = process.cpuUsage(cpu0);
  const cpuWallS = (probe.now() - t0) / 1000;
  probe.stopLagSampling();
  const result: ReplayResult = {
    mode,
    records: probe.recordsAssessed - base.recordsAssessed,
    tokens: probe.tokensAssessed - base.tokensAssessed,
    wallS,
    publishS,
    cpuS: (used.user + used.system) / 1e6,
    cpuWallS,
    consumeCpuS: (probe.consumeMs - base.consumeMs) / 1000,
    embeddedTexts: probe.embeddedTexts - base.embeddedTexts,
    embedWallS: (probe.embedMs - base.embedMs) / 1000,
    embedMaxMs: probe.embedMaxMs,
    embedFirstMs: probe.embedFirstMs,
    consumeMaxMs: probe.consumeMaxMs,
    loopDelayMs: probe.loopDelayMs(),
    lagMax: probe.maxLag(t0),
    lagEnd: probe.recordsPublished - probe.recordsAssessed,
    sampleRates: probe.rates.filter((r) => r.atMs >= t0).map((r) => r.rate),
    hostCpuPct: probe.rates.filter((r) => r.atMs >= t0).map((r) => Math.round(r.cpuPct)),
    drained,
  };
  await sleep(300);
  await app.close();
  await bus.close();
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  process.exit(0);
}

function runReplay(mode: ReplayMode, recording: string): Promise<ReplayResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-r', join(__dirname, 'ts-register.js'), __filename, 'monitor-replay', mode, recording],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (line) resolve(JSON.parse(line.slice(7)) as ReplayResult);
      else reject(new Error(`replay ${mode} exited with ${code}: ${out.slice(-2000)}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (process.argv[2] === 'monitor-replay') {
    return replayChild(process.argv[3] as ReplayMode, process.argv[4]);
  }
  const seconds = Number(process.argv[2] ?? 20);
  const streams = Number(process.argv[3] ?? 200);
  const timeScale = Number(process.argv[4] ?? 1);
  const dir = mkdtempSync(join(tmpdir(), 'fathom-keepup-'));
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(
    `semantic keep-up: ${streams} streams, ${seconds} s, sim timeScale ${timeScale}; ${cpus().length} x ${cpus()[0]?.model}, Node ${process.version}; load ${load()}`,
  );
  try {
    const c = await colocated(seconds, streams, timeScale, dir);
    console.log(`load after the co-located run: ${load()}`);
    const replays: ReplayResult[] = [];
    for (const mode of ['paced', 'flat', 'flat-no-embed'] as const)
      replays.push(await runReplay(mode, c.recording));
    console.log(`load after the replays: ${load()}`);
    report(c, replays);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(c: ColocatedResult, replays: ReplayResult[]): void {
  const f = (v: number, d = 0) =>
    v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const pct = (v: number) => `${(v * 100).toFixed(1)} %`;
  const prodRecords = c.produced.records / c.generatorS;
  const prodTokens = c.produced.tokens / c.generatorS;
  console.log('\n1. co-located: load-generator and semantic-monitor in ONE process (in-memory bus)');
  console.log(
    `   generator ran ${f(c.generatorS, 1)} s: ${f(c.produced.records)} records (${c.errors} errors), ${f(c.produced.tokens)} logprob tokens, ${f(c.produced.tokenEvents)} SSE token events, ${c.recordedMessages} telemetry messages`,
  );
  const rows: string[][] = [
    ['', 'records/s', 'tokens/s (entropy)', 'token events/s', 'embeddings/s'],
    ['produced (generator)', f(prodRecords), f(prodTokens), f(c.produced.tokenEvents / c.generatorS), ''],
    [
      'assessed (monitor)',
      f(c.assessed.records / c.consumeS),
      f(c.assessed.tokens / c.consumeS),
      '',
      f(c.embeddedTexts / c.consumeS, 1),
    ],
  ];
  table(rows);
  console.log(
    `   lag (records published, not yet assessed): max ${c.lagMax}, at generator end ${c.lagAtGeneratorEnd}, at end ${c.lagEnd}; drained ${c.drainAfterGeneratorMs === null ? 'NOT within 60 s' : `${f(c.drainAfterGeneratorMs)} ms`} after the generator stopped`,
  );
  console.log(`   lag each second: ${c.lagEverySecond.join(' ')}`);
  console.log(
    `   process CPU ${f(c.processCpuS, 1)} s over ${f(c.generatorS, 1)} s (${pct(c.processCpuS / c.generatorS)} of one core); monitor consume (decode+validate+assess+signals) ${f(c.monitorConsumeCpuS, 2)} s = ${pct(c.monitorConsumeCpuS / c.processCpuS)} of the process, decode+validate alone ${f(c.decodeMsOffline / 1000, 2)} s (re-timed offline); embedding wall ${f(c.monitorEmbedWallS, 2)} s (${c.embeddedTexts} texts)`,
  );
  console.log(
    `   event-loop delay of the shared process: p50 ${f(c.loopDelayMs.p50)} ms, p99 ${f(c.loopDelayMs.p99)} ms, max ${f(c.loopDelayMs.max)} ms; longest embedding call (worker round trip) ${f(c.embedMaxMs)} ms (the first: ${c.embedFirstMs === null ? 'none' : `${f(c.embedFirstMs)} ms`}); longest consume of one message (wall, sliced) ${f(c.consumeMaxMs)} ms`,
  );
  console.log(`   adaptive sample rate, each second: ${c.sampleRates.map((r) => r.toFixed(2)).join(' ')}`);

  console.log('\n2. own process: semantic-monitor alone, fed the recorded telemetry (bytes as published)');
  const replayRows: string[][] = [
    [
      'mode',
      'records/s',
      'tokens/s',
      'embeddings/s',
      'CPU/wall',
      'lag max',
      'lag end',
      'sample rate (last)',
      'host CPU %',
      'loop delay p99/max ms',
      'longest embed ms',
      'longest consume (wall) ms',
    ],
  ];
  for (const r of replays) {
    replayRows.push([
      r.mode,
      f(r.records / r.wallS),
      f(r.tokens / r.wallS),
      f(r.embeddedTexts / r.wallS, 1),
      pct(r.cpuS / r.cpuWallS),
      String(r.lagMax),
      `${r.lagEnd}${r.drained ? '' : ' (not drained)'}`,
      r.sampleRates.length ? r.sampleRates[r.sampleRates.length - 1].toFixed(2) : 'n/a',
      r.hostCpuPct.length ? `${Math.min(...r.hostCpuPct)}-${Math.max(...r.hostCpuPct)}` : 'n/a',
      `${f(r.loopDelayMs.p99)} / ${f(r.loopDelayMs.max)}`,
      f(r.embedMaxMs),
      f(r.consumeMaxMs),
    ]);
  }
  table(replayRows);
  const paced = replays.find((r) => r.mode === 'paced');
  const flat = replays.find((r) => r.mode === 'flat');
  const flatNoEmbed = replays.find((r) => r.mode === 'flat-no-embed');
  if (paced) {
    console.log(
      `   paced: monitor CPU ${pct(paced.cpuS / paced.cpuWallS)} of one core to follow ${f(prodRecords)} records/s; consume ${f(paced.consumeCpuS, 2)} s, embedding wall ${f(paced.embedWallS, 2)} s`,
    );
  }
  if (!flat) return;
  // Capacity: one core saturated by the monitor alone (flat replay). Headroom against the
  // co-located production rate; per-record CPU of the paced replay gives a second estimate.
  const capacity = flat.records / flat.wallS;
  const capacityByCpu = flat.records / flat.cpuS;
  const headroom = capacity / prodRecords;
  const colocatedKeepsUp = c.drainAfterGeneratorMs !== null && c.lagAtGeneratorEnd <= prodRecords;
  console.log('\nverdict');
  console.log(
    `   capacity (own process, flat): ${f(capacity)} records/s, ${f(flat.tokens / flat.wallS)} tokens/s (${f(capacityByCpu)} records per CPU-second)${flatNoEmbed ? `; without embeddings ${f(flatNoEmbed.records / flatNoEmbed.wallS)} records/s` : ''}`,
  );
  console.log(
    `   production (co-located, ${f(c.generatorS, 0)} s at the streams given): ${f(prodRecords)} records/s, ${f(prodTokens)} tokens/s`,
  );
  console.log(`   headroom = capacity / production = ${headroom.toFixed(2)}x`);
  console.log(
    `   co-located: ${colocatedKeepsUp ? 'kept up' : 'fell behind'} (lag at generator end ${c.lagAtGeneratorEnd} records = ${(c.lagAtGeneratorEnd / prodRecords).toFixed(2)} s of production)`,
  );
  console.log(`   keeps up: ${headroom >= 1 && colocatedKeepsUp ? 'YES' : 'NO'}`);
}

function table(rows: string[][]): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows) console.log(`   ${r.map((cell, i) => (cell ?? '').padEnd(widths[i])).join(' | ')}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
