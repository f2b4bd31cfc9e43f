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

/**
 * `fathom shadow gateway` runs in a child node with V8's memory reducer off (a V8 flag, which
 * only a node started with it has). The reducer shrinks an isolate's heap once it looks idle,
 * young generation included: after a quiet spell the gateway then scavenged every ~110 ms instead
 * of about once a second, and the first round of traffic after it added 3.1-3.6 ms at P99 on the
 * primary's path instead of 0.2-0.6 ms (bench/shadow-gateway.bench.ts, bench/RESULTS.md
 * 2026-12-04). The child runs in its own process group, so each signal reaches it once,
 * forwarded from here (SIGINT, SIGTERM: close or drain; SIGUSR2: the kill switch); it closes
 * itself when this process goes away.
 */
const GATEWAY_NODE_FLAGS = ['--no-memory-reducer'];
const argv = process.argv.slice(2);
const gatewayParent =
  argv[0] === 'shadow' &&
  argv[1] === 'gateway' &&
  !GATEWAY_NODE_FLAGS.every((flag) => process.execArgv.includes(flag));
if (!gatewayParent && process.env.FATHOM_GATEWAY_CHILD === '1' && process.channel) {
  // Under a `fathom` parent (below): its end, even by SIGKILL, closes the IPC channel.
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}

if (gatewayParent) runGatewayChild();
else start();

function runGatewayChild() {
  const { spawn } = require('node:child_process');
  const { constants } = require('node:os');
  const child = spawn(process.execPath, [...process.execArgv, ...GATEWAY_NODE_FLAGS, __filename, ...argv], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    // Its own process group, so a terminal's Ctrl-C reaches it once (through us); on Windows that
    // would open a console of its own.
    detached: process.platform !== 'win32',
    env: { ...process.env, FATHOM_GATEWAY_CHILD: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGUSR2']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`fathom shadow gateway: could not start node: ${error.message}\n`);
    process.exit(2);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
}

function start() {
  if (stale()) {
    execFileSync(process.execPath, [join(root, 'scripts', 'build.js')], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  require(entry);
}
