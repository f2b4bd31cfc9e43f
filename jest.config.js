// One jest run for the workspace: unit tests (*.spec.ts) beside the code, integration tests
// (*.int-spec.ts) against real PostgreSQL and the Kafka-protocol broker, and cross-service tests
// (test/e2e/*.e2e-spec.ts). swc transpiles with decorator metadata (NestJS DI needs it); tsc
// type-checks separately in `npm run typecheck`.
const { readFileSync } = require('node:fs');
const swcrc = JSON.parse(readFileSync(`${__dirname}/.swcrc`, 'utf8'));
delete swcrc.$schema;
swcrc.jsc.baseUrl = __dirname;

const moduleNameMapper = {};
for (const [alias, [target]] of Object.entries(swcrc.jsc.paths)) {
  moduleNameMapper[`^${alias}$`] = `<rootDir>/${target}`;
}

/**
 * Suites that measure time against the simulated target (latency budgets, knees, root cause
 * within 10 s, a statistical noise floor) or run five processes: beside another busy jest
 * worker on a 2-core machine they read the contention, not the system. `npm test` runs them
 * after the others, one at a time (`--selectProjects serial --runInBand`).
 */
const SERIAL = [
  'test/e2e/',
  'test/integration/analyzer/root-cause.int-spec.ts',
  // Planted faults named within 10 s of a seeded onset (bench/detection's quick slice).
  'test/integration/analyzer/detection-slice.int-spec.ts',
  'test/integration/analyzer/tier-restart.int-spec.ts',
  'test/integration/analyzer/tool-schema-drift-cause.int-spec.ts',
  'test/integration/orchestrator/rerun-cap.int-spec.ts',
  'test/integration/orchestrator/rerun-restart.int-spec.ts',
  'test/integration/orchestrator/shadow.int-spec.ts',
  // Judges latency differences per 2 s window and a 1 s kill switch.
  'test/integration/orchestrator/shadow-live.int-spec.ts',
  // Judges 1 s shadow windows and the analyzer's breaker open time.
  'test/integration/orchestrator/shadow-signals.int-spec.ts',
  // Same 2 s windows and open time, with the analyzer restarted under an open breaker.
  'test/integration/analyzer/shadow-breaker-restart.int-spec.ts',
  'libs/load/src/engine/run-shard.sim.int-spec.ts',
  'libs/load/src/driver/rag-retrieve-budget.int-spec.ts',
  'libs/gpu/src/scrape/sim-knee.int-spec.ts',
  'libs/semantic/src/monitor/hallucination-recall.int-spec.ts',
  'libs/load/src/engine/run-shard.spec.ts',
  'libs/load/src/engine/load-phases.spec.ts',
  'libs/analysis/src/report/sweep-knee.sim.int-spec.ts',
  'libs/load/src/driver/agents-workflow.driver.int-spec.ts',
  'test/integration/orchestrator/run-abort.int-spec.ts',
  'libs/sim/src/faults/faults.int-spec.ts',
  'test/integration/load-generator/breaker-gate.int-spec.ts',
  // Stops its own broker 22 s in a 30 s shard and counts against the target.
  'test/integration/load-generator/broker-outage.int-spec.ts',
  'libs/load/src/transport/http1.client.int-spec.ts',
  'libs/load/src/driver/openai-chat.driver.http1.int-spec.ts',
  // Needs its embedding sample (USE lite, CPU-bound) to cover every prompt within 2 s runs.
  'test/integration/semantic-monitor/baseline-drift.int-spec.ts',
  // Same: its 2 s runs need the USE lite worker loaded and embedding to reach 12 pairs each.
  'test/integration/semantic-monitor/rag-mismatch.int-spec.ts',
  // Compares the latency of two runs against the simulated target (fathom compare's exit code).
  'apps/cli/src/commands/report.command.int-spec.ts',
  // Judges event-loop delay and utilisation under a CPU hog: another busy worker would skew both.
  'libs/analysis/src/validity/client-bound.int-spec.ts',
].map((path) => `<rootDir>/${path}`);

const common = {
  rootDir: __dirname,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/{apps,libs,test}/**/*.{spec,int-spec,e2e-spec}.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { ...swcrc, swcrc: false }] },
  moduleNameMapper,
  // bench/device/pack.js's copy of node_modules for the GPU host: not a second set of packages.
  modulePathIgnorePatterns: ['<rootDir>/.devrun/'],
};

module.exports = {
  projects: [
    { ...common, displayName: 'parallel', testPathIgnorePatterns: ['/node_modules/', ...SERIAL] },
    {
      ...common,
      displayName: 'serial',
      testMatch: SERIAL.map((p) => (p.endsWith('/') ? `${p}**/*.e2e-spec.ts` : p)),
    },
  ],
  globalSetup: '<rootDir>/libs/testing/src/jest.global-setup.js',
  globalTeardown: '<rootDir>/libs/testing/src/jest.global-teardown.js',
  testTimeout: 30000,
  maxWorkers: 2,
};
