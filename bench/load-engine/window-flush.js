// Event-loop blocking of a shard's window flush (four HDR histograms encoded each window).
// `node bench/load-engine/window-flush.js [WINDOWS=12] [ROUNDS=2]` runs each mode ROUNDS times,
// alternating, each in its own process:
//   inline   - the recorder's `flush` at the window boundary (the engine before this change)
//   deferred - `rotate` at the boundary + `WindowEncoder` (one histogram per setImmediate)
// Synthetic traffic on a 1 ms timer: ~5,000 requests/s, a fifth of them streams of 64 chunks
// (~63k ITL values/s), e2e 20-2,000 ms with a rare 30 s outlier. Reports the longest single
// macrotask the window path ran per window (exact, timed around each slice), the window path's
// CPU per window, and monitorEventLoopDelay (1 ms resolution) over the run. Figures only.
'use strict';
const { spawnSync } = require('node:child_process');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');

const [mode, windowsArg] = process.argv.slice(2);
if (mode === 'inline' || mode === 'deferred') child(mode, Number(windowsArg));
else parent(Number(process.argv[2] ?? 12), Number(process.argv[3] ?? 2));

function parent(windows, rounds) {
  const rows = [];
  for (let r = 0; r < rounds; r++)
    for (const m of ['inline', 'deferred']) {
      const out = spawnSync(process.execPath, [__filename, m, String(windows)], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(out.stderr);
      rows.push(JSON.parse(out.stdout));
      if (process.env.VERBOSE) console.error(rows[rows.length - 1].slicesOfMax.join(' '));
    }
  const f = (x) => x.toFixed(2);
  console.log(
    'mode      windows  slice max/window ms: p50   p99    max  | path wall/window ms | ELD ms p50  p99   max',
  );
  for (const x of rows)
    console.log(
      `${x.mode.padEnd(9)} ${String(x.windows).padStart(7)}  ${f(x.sliceP50).padStart(24)} ${f(x.sliceP99).padStart(6)} ${f(x.sliceMax).padStart(6)}  | ${f(x.cpuMean).padStart(19)} | ${f(x.eldP50).padStart(10)} ${f(x.eldP99).padStart(5)} ${f(x.eldMax).padStart(6)}`,
    );
}

function child(mode, windows) {
  require('../ts-register');
  const { WindowRecorder } = require('../../libs/load/src/measure/window.recorder.ts');
  const { WindowEncoder } = require('../../libs/load/src/measure/window.encoder.ts');
  const recorder = new WindowRecorder(0, 1000);
  let slicesThisWindow = [];
  const perWindow = [];
  let justDelivered = false;
  const delivered = [];
  // Wall ms of each slice (on a shared box the OS can preempt one: that shows as an outlier).
  const timed = (fn) => {
    const t0 = performance.now();
    fn();
    slicesThisWindow.push(performance.now() - t0);
  };
  const encoder = new WindowEncoder({
    deliver: (w) => {
      delivered.push(w.requests);
      justDelivered = true;
    },
    recycle: (h) => recorder.recycle(h),
    schedule: (task) => {
      const h = setImmediate(() => {
        timed(task);
        if (!justDelivered) return;
        // the window's slices: its rotate at the boundary and its four encoding ticks
        perWindow.push(slicesThisWindow);
        slicesThisWindow = [];
        justDelivered = false;
      });
      return () => clearImmediate(h);
    },
  });
  let seed = 1;
  const rnd = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const offsets = new Array(64).fill(0);
  const sample = {
    e2eMs: 0,
    correctedE2eMs: 0,
    ttftMs: null,
    chunkOffsetsMs: [],
    errorClass: null,
    inputTokens: 10,
    outputTokens: 64,
  };
  const traffic = setInterval(() => {
    for (let i = 0; i < 5; i++) {
      const e2e = rnd() < 0.0005 ? 30000 : 20 * Math.exp(rnd() * 4.6);
      sample.e2eMs = e2e;
      sample.correctedE2eMs = e2e + rnd() * 5;
      if (i === 0) {
        let t = (sample.ttftMs = e2e * 0.2);
        for (let k = 0; k < 64; k++) offsets[k] = t += 0.5 + rnd() * 3;
        sample.chunkOffsetsMs = offsets;
      } else {
        sample.ttftMs = null;
        sample.chunkOffsetsMs = [];
      }
      recorder.observe(sample);
    }
  }, 1);
  const eld = monitorEventLoopDelay({ resolution: 1 });
  let n = 0;
  const warmup = setTimeout(() => eld.enable(), 1000);
  const ticker = setInterval(() => {
    if (mode === 'inline')
      timed(() => {
        const w = recorder.flush(Date.now());
        delivered.push(w.requests);
      });
    else timed(() => encoder.push(recorder.rotate(Date.now())));
    if (mode === 'inline') {
      perWindow.push(slicesThisWindow);
      slicesThisWindow = [];
    }
    if (++n < windows) return;
    clearInterval(ticker);
    clearInterval(traffic);
    clearTimeout(warmup);
    setTimeout(() => {
      encoder.drain();
      eld.disable();
      const measured = perWindow.slice(1); // first window: JIT warm-up
      const maxes = measured.map((s) => Math.max(...s)).sort((a, b) => a - b);
      const q = (p) => maxes[Math.min(maxes.length - 1, Math.floor(p * maxes.length))];
      const cpu = measured.map((s) => s.reduce((a, b) => a + b, 0));
      process.stdout.write(
        JSON.stringify({
          mode,
          windows: measured.length,
          requestsPerWindow: Math.round(delivered.slice(1).reduce((a, b) => a + b, 0) / measured.length),
          sliceP50: q(0.5),
          sliceP99: q(0.99),
          sliceMax: maxes[maxes.length - 1],
          cpuMean: cpu.reduce((a, b) => a + b, 0) / cpu.length,
          slicesOfMax: perWindow.slice(1).map((sl) => sl.map((x) => x.toFixed(1)).join('/')),
          eldP50: eld.percentile(50) / 1e6,
          eldP99: eld.percentile(99) / 1e6,
          eldMax: eld.max / 1e6,
        }),
      );
    }, 50);
  }, 1000);
}
