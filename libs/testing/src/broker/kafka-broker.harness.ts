import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ALL_TOPIC_NAMES } from '@fathom/contracts';

export interface KafkaBrokerOptions {
  /** Partitions of every topic (the launcher's own default is 3). */
  readonly partitions?: number;
  /** Topics to create besides every topic of the contracts registry. */
  readonly topics?: readonly string[];
  /** Mock brokers in the cluster. */
  readonly brokers?: number;
}

export interface KafkaBroker {
  /** Bootstrap addresses, `host:port`. */
  readonly brokers: string[];
  /** Simulates an outage: every broker drops its connections and refuses new ones. */
  down(): Promise<void>;
  /** Ends the outage started by `down()`. */
  up(): Promise<void>;
  stop(): Promise<void>;
}

const SOURCE = resolve(__dirname, 'kafka-mock-broker.c');
const BOOTSTRAP_TIMEOUT_MS = 10_000;

function workspaceRoot(): string {
  // libs/testing/src/broker -> workspace root
  return resolve(__dirname, '..', '..', '..', '..');
}

/**
 * Compiles the launcher once per source version into node_modules/.cache and returns its path.
 * Concurrent callers are safe: each compiles to a temporary name and renames into place.
 */
export function compileKafkaBroker(
  cacheRoot = join(workspaceRoot(), 'node_modules', '.cache', 'fathom-broker'),
): string {
  const source = readFileSync(SOURCE);
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const dir = join(cacheRoot, digest);
  const binary = join(dir, 'kafka-mock-broker');
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.${process.pid}.tmp`;
  const gcc = spawnSync('gcc', ['-O2', '-o', partial, SOURCE, '-lrdkafka'], { encoding: 'utf8' });
  if (gcc.error) {
    throw new Error(
      `cannot compile the Kafka test broker: gcc is not available (${gcc.error.message}); ` +
        'install gcc and librdkafka-dev (apt-get install gcc librdkafka-dev)',
    );
  }
  if (gcc.status !== 0) {
    throw new Error(
      `cannot compile the Kafka test broker (gcc exit ${gcc.status}); install librdkafka-dev ` +
        `(apt-get install librdkafka-dev), which ships librdkafka/rdkafka_mock.h:\n${gcc.stderr}`,
    );
  }
  renameSync(partial, binary);
  return binary;
}

/**
 * Starts librdkafka's mock cluster on 127.0.0.1 with every registry topic (and `topics`) created,
 * and resolves once it printed its bootstrap list.
 */
export async function startKafkaBroker(options: KafkaBrokerOptions = {}): Promise<KafkaBroker> {
  const binary = compileKafkaBroker();
  const topics = [...new Set([...ALL_TOPIC_NAMES, ...(options.topics ?? [])])];
  const args = [
    '--brokers',
    String(options.brokers ?? 1),
    '--partitions',
    String(options.partitions ?? 3),
    ...topics,
  ];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

  // The launcher speaks in lines: "BOOTSTRAP host:port,..." once, then "DOWN"/"UP" on request.
  let onBootstrap: (brokers: string[]) => void = () => undefined;
  const lineWaiters: { line: string; done: () => void }[] = [];
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    let newline: number;
    while ((newline = stdout.indexOf('\n')) >= 0) {
      const line = stdout.slice(0, newline);
      stdout = stdout.slice(newline + 1);
      const bootstrap = /^BOOTSTRAP (\S+)$/.exec(line);
      if (bootstrap) onBootstrap(bootstrap[1].split(','));
      const waiter = lineWaiters.findIndex((w) => w.line === line);
      if (waiter >= 0) lineWaiters.splice(waiter, 1)[0].done();
    }
  });
  const signalAndWait = (signal: NodeJS.Signals, line: string): Promise<void> =>
    new Promise<void>((done, fail) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        fail(new Error('the Kafka test broker has stopped'));
        return;
      }
      lineWaiters.push({ line, done });
      child.kill(signal);
    });

  const brokers = await new Promise<string[]>((ready, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      fail(
        new Error(`Kafka test broker printed no bootstrap list within ${BOOTSTRAP_TIMEOUT_MS} ms: ${stderr}`),
      );
    }, BOOTSTRAP_TIMEOUT_MS);
    onBootstrap = (list) => {
      clearTimeout(timer);
      ready(list);
    };
    child.once('error', (error) => {
      clearTimeout(timer);
      fail(new Error(`cannot start the Kafka test broker ${binary}: ${error.message}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`Kafka test broker exited early (code ${code}, signal ${signal}): ${stderr}`));
    });
  });

  return {
    brokers,
    down: () => signalAndWait('SIGUSR1', 'DOWN'),
    up: () => signalAndWait('SIGUSR2', 'UP'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
