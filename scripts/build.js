#!/usr/bin/env node
// Compiles apps/ and libs/ to dist/ with swc (path aliases rewritten, decorator metadata kept),
// skipping tests. Type checking is `npm run typecheck` (tsc), kept apart because it is slower.
// The new tree is compiled beside dist/ and swapped in with renames, so a `fathom` process that
// starts while another rebuilds never finds dist/ half-written or gone.
'use strict';
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');
const { rmSync, renameSync, existsSync } = require('node:fs');

const root = join(__dirname, '..');
const swc = join(root, 'node_modules', '@swc', 'cli', 'bin', 'swc.js');
const dist = join(root, 'dist');
const fresh = join(root, `.dist-${process.pid}`);
const stale = join(root, `.dist-old-${process.pid}`);

rmSync(fresh, { recursive: true, force: true });
try {
  execFileSync(
    process.execPath,
    [
      swc,
      'apps',
      'libs',
      '-d',
      fresh,
      '--config-file',
      '.swcrc',
      '--copy-files',
      '--ignore',
      '**/*.spec.ts,**/*.int-spec.ts,**/*.e2e-spec.ts',
      '--quiet',
    ],
    { cwd: root, stdio: 'inherit' },
  );
  if (existsSync(dist)) renameSync(dist, stale);
  renameSync(fresh, dist);
} finally {
  rmSync(fresh, { recursive: true, force: true });
  rmSync(stale, { recursive: true, force: true });
}
