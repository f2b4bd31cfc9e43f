#!/usr/bin/env node
// The `fathom` command. Runs the compiled CLI from dist/; compiles first (swc, about a second)
// when dist/ is missing or older than the sources, so `npx fathom` works straight after `npm ci`.
'use strict';
const { existsSync, statSync, readdirSync } = require('node:fs');
const { join } = require('node:path');
const { execFileSync } = require('node:child_process');

const root = join(__dirname, '..');
const entry = join(root, 'dist', 'apps', 'cli', 'src', 'main.js');

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') newest = Math.max(newest, newestSource(path));
    } else if (entry.name.endsWith('.ts')) {
      newest = Math.max(newest, statSync(path).mtimeMs);
    }
  }
  return newest;
}

function stale() {
  if (!existsSync(entry)) return true;
  if (!existsSync(join(root, 'apps'))) return false;
  const built = statSync(entry).mtimeMs;
  return newestSource(join(root, 'apps')) > built || newestSource(join(root, 'libs')) > built;
}

if (stale()) {
  execFileSync(process.execPath, [join(root, 'scripts', 'build.js')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
require(entry);
