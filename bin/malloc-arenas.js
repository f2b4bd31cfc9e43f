// Caps glibc's malloc arenas for the `fathom` command (bin/fathom.js).
//
// glibc gives each thread that allocates an arena of its own, up to 8 per core: the load
// engine's and the embedding model's worker threads, libuv's pool, onnxruntime's threads. Freed
// memory in one arena is not reused by another, so a long run's RSS crept. Measured
// (bench/memory.bench.ts, 15 minutes, 48 streams, 2 cores, side by side): MALLOC_ARENA_MAX=2
// kept RSS ~100 MB lower (670 against 780 MB at the end) and its growth past the analyzer's live
// horizon at 1.3 against 3.1 MB/min. glibc reads it only when a process starts, so the command
// starts itself again, once, with it set. Other C libraries ignore it.
'use strict';
const { spawn } = require('node:child_process');

const ARENA_MAX = '2';

/**
 * The environment the command starts again with, or null to go on as it is: not Linux, or
 * MALLOC_ARENA_MAX already set (by the user, any value, or by the first start).
 */
function relaunchEnv(env, platform) {
  if (platform !== 'linux' || env.MALLOC_ARENA_MAX !== undefined) return null;
  return { ...env, MALLOC_ARENA_MAX: ARENA_MAX };
}

/**
 * Runs this process's script again as a child with `env`, sharing its stdio, and ends as the
 * child ends (its exit code, or its signal). A terminal's signals (Ctrl-C, hang-up, quit) reach
 * both processes, the child handles them; SIGTERM and SIGUSR2 sent to this process alone (a
 * supervisor, `kill`, the shadow's kill switch) are passed on.
 */
function relaunch(env) {
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env,
  });
  const ignore = () => undefined;
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGHUP', 'SIGQUIT']) process.on(signal, ignore);
  for (const signal of ['SIGTERM', 'SIGUSR2']) process.on(signal, forward);
  child.on('error', (error) => {
    console.error(`fathom: could not start again with MALLOC_ARENA_MAX set: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
}

module.exports = { relaunchEnv, relaunch };
