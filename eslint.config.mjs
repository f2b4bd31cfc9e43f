// Lint: typescript-eslint on every project, and Nx's module-boundary rule with the real tags
// from each project.json. The rules below are what the workspace refuses, not decoration:
// - by type: domain libs stay plain TypeScript (no NestJS, kafkajs, pg); infra never reaches
//   into domain or feature code; a feature never imports another feature; only the host
//   (libs/runtime) and apps put features together; nothing imports an app;
// - by scope: a service's feature project depends on `scope:shared` and its own scope only;
// - tests inside a project may also use the testing lib (`type:testing`), nothing more;
// - `process.env` is read only by libs/runtime, apps/, bench/ and test code (libs/testing too):
//   every service gets its settings validated once at boot and injected.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

const SERVICES = ['orchestrator', 'load-generator', 'semantic-monitor', 'gpu-collector', 'analyzer'];
const NEST_AND_DRIVERS = ['@nestjs/*', 'kafkajs', 'pg', '@electric-sql/pglite', 'express'];

/** `extra` tags are allowed besides each rule's own (tests: the testing lib). */
function depConstraints(extra = []) {
  const allow = (tags) => [...tags, ...extra];
  return [
    { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: allow(['type:contracts']) },
    {
      sourceTag: 'type:domain',
      onlyDependOnLibsWithTags: allow(['type:contracts', 'type:domain']),
      bannedExternalImports: NEST_AND_DRIVERS,
    },
    { sourceTag: 'type:infra', onlyDependOnLibsWithTags: allow(['type:contracts', 'type:infra']) },
    {
      sourceTag: 'type:feature',
      onlyDependOnLibsWithTags: allow(['type:contracts', 'type:infra', 'type:domain']),
    },
    {
      sourceTag: 'type:host',
      onlyDependOnLibsWithTags: allow(['type:contracts', 'type:infra', 'type:domain', 'type:feature']),
    },
    {
      sourceTag: 'type:testing',
      onlyDependOnLibsWithTags: ['type:contracts', 'type:infra', 'type:domain', 'type:testing'],
    },
    {
      sourceTag: 'type:app',
      onlyDependOnLibsWithTags: allow([
        'type:contracts',
        'type:infra',
        'type:domain',
        'type:feature',
        'type:host',
      ]),
    },
    ...SERVICES.map((service) => ({
      sourceTag: `scope:${service}`,
      onlyDependOnLibsWithTags: allow(['scope:shared', `scope:${service}`, 'scope:runtime']),
    })),
  ];
}

// `checkDynamicDependenciesExceptions`: Nx forbids a static import of a lib that the same project
// also loads with `await import()` (a bundler could not split it off). Nothing here is bundled:
// the CLI's commands load their libs on first use (registering them loads none, commands.spec.ts),
// and a module that only those loads reach, or a test, may import the same libs statically.
const boundaries = (extra) => [
  'error',
  {
    enforceBuildableLibDependency: false,
    allow: [],
    depConstraints: depConstraints(extra),
    checkDynamicDependenciesExceptions: ['@fathom/*'],
  },
];

const TESTS = [
  '**/*.spec.ts',
  '**/*.int-spec.ts',
  '**/*.e2e-spec.ts',
  '**/*.test-util.ts',
  '**/__fixtures__/**/*.ts',
];

export default [
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.nx/**', 'coverage/**', '**/*.js', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': boundaries([]),
    },
  },
  {
    files: ['libs/**/*.ts'],
    ignores: ['libs/runtime/**', 'libs/testing/**', ...TESTS],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'settings come validated from libs/runtime (each service has a typed settings object)',
        },
      ],
    },
  },
  {
    files: TESTS,
    rules: { '@nx/enforce-module-boundaries': boundaries(['type:testing']) },
  },
  {
    // test/ and bench/ belong to no project: whole-stack integration, end-to-end and benchmarks
    // use any lib (the rule has no project to judge them by).
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': 'off' },
  },
];
