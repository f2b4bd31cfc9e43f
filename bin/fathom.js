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
 * Some commands run in a child node started with what only a process's start can set; this
 * process only forwards signals to it and exits with its code.
 *
 * `fathom shadow gateway`: V8's memory reducer off (a V8 flag, which only a node started with it
 * has). The reducer shrinks an isolate's heap once it looks idle, young generation included:
 * after a quiet spell the gateway then scavenged every ~110 ms instead of about once a second,
 * and the first round of traffic after it added 3.1-3.6 ms at P99 on the primary's path instead
 * of 0.2-0.6 ms (bench/shadow-gateway.bench.ts, bench/RESULTS.md 2026-12-04).
 *
 * The commands that run for hours (`up`, `run` without `--api`, `shadow gateway`), on Linux:
 * `MALLOC_ARENA_MAX=2` unless the environment sets it (glibc reads it only at start). glibc gives
 * each allocating thread (the load engine, the embedder, libuv's pool) an arena of its own and
 * does not reuse one's free memory in another: without it embedded Fathom sat ~100 MB higher and
 * grew 2.5x faster past the live horizon (RELIABILITY.md, bench/RESULTS.md 2026-12-07).
 *
 * The child runs in its own process group, so each signal reaches it once, forwarded from here
 * (SIGINT: a run's abort, a second one quits; SIGTERM: close or drain; SIGUSR2: the gateway's
 * kill switch; SIGWINCH: a resized terminal, for the progress line); it ends itself when this
 * process goes away.
 */
const GATEWAY_NODE_FLAGS = ['--no-memory-reducer'];
const argv = process.argv.slice(2);
const gateway = argv[0] === 'shadow' && argv[1] === 'gateway';
const remote = argv.some((arg) => arg === '--api' || arg.startsWith('--api='));
const longRunning = gateway || argv[0] === 'up' || (argv[0] === 'run' && !remote);
const childFlags = gateway ? GATEWAY_NODE_FLAGS.filter((flag) => !process.execArgv.includes(flag)) : [];
// Not under a debugger (`node --inspect bin/fathom.js ...`): the debugged process is the real one.
const inspected = process.execArgv.some((flag) => flag.startsWith('--inspect'));
const childEnv =
  longRunning && !inspected && process.platform === 'linux' && process.env.MALLOC_ARENA_MAX === undefined
    ? { MALLOC_ARENA_MAX: '2' }
    : {};
const parent = childFlags.length > 0 || Object.keys(childEnv).length > 0;
if (!parent && process.env.FATHOM_CHILD === '1' && process.channel) {
  // Under a `fathom` parent (below): its end, even by SIGKILL, closes the IPC channel.
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}

if (parent) runChild();
else start();

function runChild() {
  const { spawn } = require('node:child_process');
  const { constants } = require('node:os');
  const child = spawn(process.execPath, [...process.execArgv, ...childFlags, __filename, ...argv], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    // Its own process group, so a terminal's Ctrl-C reaches it once (through us); on Windows that
    // would open a console of its own.
    detached: process.platform !== 'win32',
    env: { ...process.env, ...childEnv, FATHOM_CHILD: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGUSR2', 'SIGWINCH'])
    process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`fathom: could not start node: ${error.message}\n`);
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
