import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { request } from 'undici';
import { startKafkaBroker, waitFor, type KafkaBroker } from '@fathom/testing';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import { createBus, type Bus } from '@fathom/bus';
import { Topics, type DeadLetter, type RunSummary } from '@fathom/contracts';
import { startServiceProcess, type ServiceProcess } from './service-process.harness';

/**
 * The five services as separate processes over the Kafka-protocol broker and the real
 * PostgreSQL at 127.0.0.1:5432 (a database of its own, dropped at the end).
 */
const SERVICES = ['orchestrator', 'load-generator', 'semantic-monitor', 'gpu-collector', 'analyzer'] as const;
const ADMIN_URL = process.env.FATHOM_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface RunView {
  id: string;
  status: string;
  reason: string | null;
  summary: RunSummary | null;
}

describe('five services over Kafka and PostgreSQL', () => {
  jest.setTimeout(120_000);

  let broker: KafkaBroker;
  let sim: SimTarget;
  let env: Record<string, string>;
  let database: string;
  const services = new Map<string, ServiceProcess>();
  let api: string;

  beforeAll(async () => {
    broker = await startKafkaBroker({ partitions: 3 });
    sim = await startSimTarget({ port: 0 });
    database = `fathom_e2e_${randomUUID().slice(0, 8)}`;
    const admin = new Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create database ${database}`);
    await admin.end();
    env = {
      FATHOM_BUS: 'kafka',
      KAFKA_BROKERS: broker.brokers.join(','),
      // The mock cluster rebalances in ~29 s with kafkajs defaults; these keep restarts quick.
      KAFKA_SESSION_TIMEOUT_MS: '3000',
      KAFKA_HEARTBEAT_INTERVAL_MS: '300',
      KAFKA_MAX_WAIT_MS: '200',
      DATABASE_URL: ADMIN_URL.replace(/\/[^/]*$/, `/${database}`),
      FATHOM_ANALYZER_SETTLE_MS: '20000',
      // A killed generator's run is reported partial 10 s after its planned end (default 45 s).
      FATHOM_ANALYZER_SHARD_SILENCE_MS: '10000',
      FATHOM_GPU_SCRAPE_MS: '500',
    };
    // The database is migrated by whichever of orchestrator and analyzer opens it first.
    // Every service that did start is kept for afterAll to stop, also when another one failed.
    const started = await Promise.allSettled(
      SERVICES.map((name) => startServiceProcess(name, { ...env, KAFKA_CLIENT_ID: name })),
    );
    for (const s of started) if (s.status === 'fulfilled') services.set(s.value.name, s.value);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    api = services.get('orchestrator')!.url;
  });

  afterAll(async () => {
    await Promise.all([...services.values()].map((s) => s.stop()));
    await sim?.close();
    await broker?.stop();
    if (database) {
      const admin = new Client({ connectionString: ADMIN_URL });
      await admin.connect();
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.end();
    }
  });

  function campaign(overrides: Record<string, unknown> = {}) {
    return {
      name: 'e2e chat',
      target: { baseUrl: `${sim.url}/v1`, metricsUrls: [`${sim.url}/metrics`] },
      scenario: {
        type: 'chat',
        model: 'fathom-sim-8b',
        prompts: ['Explain KV caching.', 'Name three rivers.'],
        maxTokens: 16,
      },
      load: { concurrency: 8, durationMs: 3000 },
      reruns: { maxReruns: 0, cooldownMs: 0 },
      ...overrides,
    };
  }

  async function post(body: unknown) {
    const res = await request(`${api}/v1/campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
  }

  async function finished(runId: string, timeoutMs = 60_000): Promise<RunView> {
    let run: RunView | null = null;
    await waitFor(
      async () => {
        const res = await request(`${api}/v1/runs/${runId}`);
        run = (await res.body.json()) as RunView;
        return (
          ['completed', 'partial', 'failed', 'aborted'].includes(run.status) &&
          (run.summary !== null || run.status === 'failed')
        );
      },
      { timeoutMs, intervalMs: 250 },
    );
    return run!;
  }

  async function lifecycleCounts(runId: string) {
    const db = new Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      const { rows } = await db.query<{ payload: { phase: string; counts: Record<string, number> } }>(
        'select payload from run_events where run_id = $1 and topic = $2',
        [runId, Topics.runLifecycle.name],
      );
      const ended = rows.map((r) => r.payload).filter((p) => p.phase !== 'shard-started');
      const generators = new Set(
        rows.map((r) => (r.payload as unknown as { generatorId: string }).generatorId),
      );
      const windows = await db.query<{ n: string }>(
        'select count(*) as n from run_events where run_id = $1 and topic = $2',
        [runId, Topics.telemetryWindow.name],
      );
      return {
        // Every request the generators finished, successful or not (`completed` counts successes).
        finished: ended.reduce((n, p) => n + p.counts.completed + p.counts.errors, 0),
        windowsPublished: ended.reduce((n, p) => n + p.counts.windowsPublished, 0),
        windowsStored: Number(windows.rows[0].n),
        generators: generators.size,
      };
    } finally {
      await db.end();
    }
  }

  it('runs a campaign through all five services and reports its summary', async () => {
    const created = await post(campaign());
    expect(created.status).toBe(201);
    const run = await finished(created.body.runId as string);
    expect(run.status).toBe('completed');
    const s = run.summary!;
    expect(s.requests).toBeGreaterThan(10);
    expect(s.errors).toBe(0);
    expect(s.latencyMs.ttft.p99).not.toBeNull();
    expect(s.latencyMs.e2e.p50).toBeLessThanOrEqual(s.latencyMs.e2e.p99!);
    expect(s.semantic.responses).toBe(s.requests);
    expect(s.semantic.outputTokens).toBeGreaterThan(s.requests);
    expect(s.gpu.scrapes).toBeGreaterThan(0);
    expect(s.tier).toMatch(/^SLO-/);
    const counts = await lifecycleCounts(run.id);
    expect(s.requests).toBe(counts.finished);
  });

  it('shares one run between two load-generators through the consumer group and merges their counts exactly', async () => {
    const second = await startServiceProcess('load-generator', {
      ...env,
      KAFKA_CLIENT_ID: 'load-generator-2',
    });
    services.set('load-generator-2', second);
    // 16 shards over 3 partitions: both members own some (all on one member: p < 0.2 %).
    const created = await post(campaign({ load: { concurrency: 16, durationMs: 2500, shards: 16 } }));
    const run = await finished(created.body.runId as string);
    expect(run.status).toBe('completed');
    const counts = await lifecycleCounts(run.id);
    expect(counts.generators).toBe(2);
    expect(counts.windowsStored).toBe(counts.windowsPublished);
    expect(run.summary!.requests).toBe(counts.finished);
    expect(run.summary!.latencyMs.e2e.count).toBe(run.summary!.requests - run.summary!.errors);
  });

  it('loses no telemetry when the analyzer is killed mid-run and restarted', async () => {
    const created = await post(campaign({ load: { concurrency: 8, durationMs: 6000 } }));
    const runId = created.body.runId as string;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await services.get('analyzer')!.kill();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    services.set(
      'analyzer',
      await startServiceProcess('analyzer', { ...env, KAFKA_CLIENT_ID: 'analyzer-2' }),
    );
    const run = await finished(runId, 90_000);
    expect(run.status).toBe('completed');
    const counts = await lifecycleCounts(runId);
    expect(counts.windowsStored).toBe(counts.windowsPublished);
    expect(run.summary!.requests).toBe(counts.finished);
    expect(run.summary!.requests).toBeGreaterThan(0);
  });

  /** Requests the simulated target says it served: the sum of its `vllm:request_success_total`. */
  async function servedByTarget(): Promise<number> {
    const text = await (await request(`${sim.url}/metrics`)).body.text();
    let total = 0;
    for (const line of text.split('\n'))
      if (line.startsWith('vllm:request_success_total')) total += Number(line.split(' ').pop());
    return total;
  }

  it('counts what the target served through a generator kill, a broker restart and a PostgreSQL connection drop', async () => {
    if (!services.has('load-generator-2'))
      services.set(
        'load-generator-2',
        await startServiceProcess('load-generator', { ...env, KAFKA_CLIENT_ID: 'load-generator-2' }),
      );
    const servedBefore = await servedByTarget();
    // 12 shards over 3 partitions: both generators own some (all on one: p < 0.5 %).
    const created = await post(campaign({ load: { concurrency: 12, durationMs: 9000, shards: 12 } }));
    const runId = created.body.runId as string;
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    await pause(2500);
    await services.get('load-generator-2')!.kill();
    services.delete('load-generator-2');
    await pause(500);
    await broker.down();
    await pause(4000);
    await broker.up();
    const admin = new Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      const { rowCount } = await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [database],
      );
      expect(rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }

    const run = await finished(runId, 120_000);
    const served = (await servedByTarget()) - servedBefore;
    const s = run.summary!;

    // The dead generator's shards are named (one it took but had not started yet has no
    // generator), and what it measured before it died is kept.
    expect(run.status).toBe('partial');
    expect(s.telemetry?.shardsMissing.length).toBeGreaterThan(0);
    expect(run.reason).toMatch(/stopped reporting|never started/);
    // Nothing the surviving generator sent was lost to the broker restart or the dropped connections.
    expect(s.telemetry?.requestsMissing).toBe(0);
    expect(s.errors).toBe(0);
    // Against the target's own count: only the dead generator's last second and its requests in
    // flight are missing.
    expect(s.requests).toBeLessThanOrEqual(served);
    expect(s.requests).toBeGreaterThanOrEqual(served * 0.85);
    const report = await request(`${api}/v1/runs/${runId}/report`);
    expect(report.statusCode).toBe(200);
    await report.body.dump();
  }, 180_000);

  it('dead-letters a malformed message on every topic and keeps consuming', async () => {
    const bus: Bus = createBus({
      kind: 'kafka',
      brokers: broker.brokers,
      clientId: 'e2e-dlq',
      consumer: { sessionTimeout: 3000, heartbeatInterval: 300, maxWaitTimeInMs: 200 },
    });
    const letters: DeadLetter[] = [];
    const sub = await bus.subscribe(
      Topics.deadLetter,
      { group: `e2e-dlq-${randomUUID()}`, fromBeginning: true },
      (d) => {
        letters.push(d);
      },
    );
    try {
      const consumed = [
        Topics.runShard,
        Topics.runLifecycle,
        Topics.requestTelemetry,
        Topics.telemetryWindow,
        Topics.gpuTelemetry,
        Topics.semanticSignal,
        Topics.sloTier,
        Topics.runReport,
      ];
      for (const topic of consumed)
        await bus.publishRaw(topic.name, '{"not": "an event"', `poison-${topic.name}`);
      await waitFor(() => consumed.every((t) => letters.some((l) => l.originalTopic === t.name)), {
        timeoutMs: 30_000,
      });
      expect(letters.find((l) => l.originalTopic === Topics.telemetryWindow.name)?.reason).toBe(
        'invalid-json',
      );
      const created = await post(campaign({ load: { concurrency: 4, durationMs: 1500 } }));
      expect((await finished(created.body.runId as string)).status).toBe('completed');
    } finally {
      await sub.close();
      await bus.close();
    }
  });

  it('refuses a bad campaign with the field named, and fails a run whose target is unreachable', async () => {
    const bad = await post(campaign({ load: { concurrency: -2, durationMs: 1000, surprise: true } }));
    expect(bad.status).toBe(400);
    const fields = (bad.body.issues as Array<{ field: string }>).map((i) => i.field);
    expect(fields).toEqual(expect.arrayContaining(['load.concurrency', 'load.surprise']));

    const unreachable = await post(campaign({ target: { baseUrl: 'http://127.0.0.1:9/v1' } }));
    const run = await finished(unreachable.body.runId as string);
    expect(run.status).toBe('failed');
    expect(run.reason).toContain('target unreachable');
  });
});
