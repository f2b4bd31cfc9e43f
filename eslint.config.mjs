// Lint: typescript-eslint on every project, and Nx's module-boundary rule with the real tags
// from each project.json. The rules below are what the workspace refuses, not decoration:
// domain libs stay plain TypeScript (no NestJS, kafkajs, pg), infra never reaches into
// domain or feature code, and nothing imports an app.
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default [
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.nx/**', 'coverage/**', '**/*.js', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
            {
              sourceTag: 'type:domain',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:domain'],
              bannedExternalImports: ['@nestjs/*', 'kafkajs', 'pg', '@electric-sql/pglite', 'express'],
            },
            { sourceTag: 'type:infra', onlyDependOnLibsWithTags: ['type:contracts', 'type:infra'] },
            {
              sourceTag: 'type:feature',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:infra', 'type:domain', 'type:feature'],
            },
            {
              sourceTag: 'type:testing',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:infra', 'type:domain', 'type:testing'],
            },
            {
              sourceTag: 'type:app',
              onlyDependOnLibsWithTags: ['type:contracts', 'type:infra', 'type:domain', 'type:feature'],
            },
          ],
        },
      ],
    },
  },
  {
    // Tests may use the testing lib (broker harness, fixtures) whatever project they sit in.
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': 'off' },
  },
];
