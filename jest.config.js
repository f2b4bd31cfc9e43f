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

module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/{apps,libs,test}/**/*.{spec,int-spec,e2e-spec}.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { ...swcrc, swcrc: false }] },
  moduleNameMapper,
  globalSetup: '<rootDir>/libs/testing/src/jest.global-setup.js',
  globalTeardown: '<rootDir>/libs/testing/src/jest.global-teardown.js',
  testTimeout: 30000,
  maxWorkers: 2,
};
