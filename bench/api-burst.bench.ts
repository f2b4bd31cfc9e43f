/**
 * 200 campaigns posted at once to `fathom up` (issue 14): how many runs end completed, how many
 * fail and why (the issue saw 180 of 200 fail "target unreachable": Fathom's own overload timed
 * out its model probe), and the requests the runs counted against what the simulated target says
 * it served (`vllm:request_success_total`). `fathom up --memory --sim` as a user starts it, in a
 * child process; figures only, never a test.
 * Run: node -r ./bench/ts-register.js bench/api-burst.bench.ts [campaigns=200] [seconds=2] [streams=2]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';

const campaigns = Number(process.argv[2] ?? 200);
const seconds = Number(process.argv[3] ?? 2);
const streams = Number(process.argv[4] ?? 2);
const apiPort = 17100 + Math.floor(Math.random() * 500);
const simPort = apiPort + 1000;
const api = `http://127.0.0.1:${apiPort}`;
const TERMINAL = new Set(['completed', 'failed', 'aborted', 'slo-failed', 'partial']);

async function until<T>(fn: () => Promise<T | null>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => null);
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function served(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${simPort}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('vllm:request_success_total')) total += Number(line.split(' ').pop());
  }
  return total;
}

async function main(): Promise<void> {
  const root = join(__dirname, '..');
  const up: ChildProcess = spawn(
    process.execPath,
    [
      join(root, 'bin/fathom.js'),
      'up',
      '--memory',
      '--sim',
      '--port',
      String(apiPort),
      '--sim-port',
      String(simPort),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  try {
    await until(async () => ((await fetch(`${api}/v1/runs?limit=1`)).ok ? true : null), 120_000, 'the API');
    const before = await served();
    console.log(
      `${campaigns} campaigns of ${seconds} s x ${streams} streams posted at once to fathom up --memory --sim; ` +
        `node ${process.version}, ${cpus().length} cores, load ${loadavg()[0].toFixed(1)}`,
    );
    const t0 = Date.now();
    const posted = await Promise.all(
      Array.from({ length: campaigns }, async (_, i) => {
        const res = await fetch(`${api}/v1/campaigns`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            name: `burst ${i}`,
            target: { baseUrl: `http://127.0.0.1:${simPort}/v1` },
            scenario: { type: 'chat', prompts: ['Name three rivers.'], maxTokens: 16 },
            load: { concurrency: streams, durationMs: seconds * 1000 },
            reruns: { maxReruns: 0, cooldownMs: 0 },
          }),
        });
        const body = (await res.json()) as { runId?: string };
        return { status: res.status, runId: body.runId ?? null };
      }),
    );
    const accepted = posted.filter((p) => p.status === 201 && p.runId);
    console.log(`  POST: ${accepted.length} of ${campaigns} accepted (201) in ${Date.now() - t0} ms`);
    const runs = await until(
      async () => {
        const all = await Promise.all(
          accepted.map(async (p) => (await (await fetch(`${api}/v1/runs/${p.runId}`)).json()) as Run),
        );
        return all.every((r) => TERMINAL.has(r.status)) ? all : null;
      },
      30 * 60_000,
      'every run to end',
    );
    const after = await served();
    const byStatus = new Map<string, number>();
    const reasons = new Map<string, number>();
    for (const r of runs) {
      byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
      if (r.status !== 'completed') {
        const reason = (r.reason ?? 'none').replace(/[0-9a-f-]{36}/g, '<id>').slice(0, 100);
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      }
    }
    const counted = runs.reduce((n, r) => n + (r.summary?.requests ?? 0), 0);
    console.log(
      `  all ended after ${((Date.now() - t0) / 1000).toFixed(0)} s: ${[...byStatus].map(([s, n]) => `${s} ${n}`).join(', ')}`,
    );
    for (const [reason, n] of reasons) console.log(`    ${n} x ${reason}`);
    console.log(`  requests: the runs' summaries count ${counted}; the target served ${after - before}`);
  } finally {
    up.kill('SIGTERM');
  }
}

interface Run {
  readonly status: string;
  readonly reason: string | null;
  readonly summary: { readonly requests: number } | null;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
