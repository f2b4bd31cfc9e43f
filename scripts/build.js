#!/usr/bin/env node
// Compiles apps/ and libs/ to dist/ with swc (path aliases rewritten, decorator metadata kept),
// skipping tests. Type checking is `npm run typecheck` (tsc), kept apart because it is slower.
'use strict';
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');
const { rmSync, utimesSync, existsSync } = require('node:fs');

const root = join(__dirname, '..');
const swc = join(root, 'node_modules', '@swc', 'cli', 'bin', 'swc.js');
rmSync(join(root, 'dist'), { recursive: true, force: true });
execFileSync(
  process.execPath,
  [swc, 'apps', 'libs', '-d', 'dist', '--config-file', '.swcrc', '--copy-files', '--ignore', '**/*.spec.ts,**/*.int-spec.ts,**/*.e2e-spec.ts', '--quiet'],
  { cwd: root, stdio: 'inherit' },
);
const entry = join(root, 'dist', 'apps', 'cli', 'src', 'main.js');
if (existsSync(entry)) utimesSync(entry, new Date(), new Date());
