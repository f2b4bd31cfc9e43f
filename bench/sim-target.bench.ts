/**
 * How fast the simulated target streams, on one core (its server is one Node process).
 * Run: node -r ./bench/ts-register.js bench/sim-target.bench.ts [seconds] [concurrency]
 *
 * The server runs in a child process with a near-zero timeScale (model time barely costs wall
 * time) and a large batch, so the figure is the CPU ceiling of the HTTP/SSE path, not the
 * physics. tokens per server-CPU-second is the "per core" figure. Never fails on timing.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';

const seconds = Number(process.argv[2] ?? 10);
const concurrency = Number(process.argv[3] ?? 64);
const port = 18000 + Math.floor(Math.random() * 1000);

function cpuSeconds(pid: number): number {
  // /proc/<pid>/stat fields 14 and 15: utime and stime in clock ticks (100 per second on Linux).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main(): Promise<void> {
  const configPath = join(tmpdir(), `sim-bench-${process.pid}.yaml`);
  writeFileSync(configPath, 'timeScale: 0.001\nengine: { maxNumSeqs: 512, maxNumBatchedTokens: 65536, numBlocks: 65536 }\nrag: { initialIndexSize: 0 }\n');
  const root = join(__dirname, '..');
  const child = spawn(process.execPath, ['-r', join(__dirname, 'ts-register.js'), join(root, 'apps/sim-target/src/main.ts')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', SIM_CONFIG: configPath },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => child.stdout!.on('data', (d: Buffer) => d.toString().includes('listening') && resolve()));

  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: concurrency, pipelining: 1 });
  const body = JSON.stringify({ model: 'fathom-sim-8b', messages: [{ role: 'user', content: 'Benchmark the streaming path, please.' }], stream: true, stream_options: { include_usage: true } });
  let streams = 0;
  let tokens = 0;
  let errors = 0;
  const deadline = Date.now() + seconds * 1000;
  const cpuStart = cpuSeconds(child.pid!);
  const wallStart = Date.now();
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline) {
      try {
        const res = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body });
        let text = '';
        for await (const chunk of res.body) text += chunk;
        // Content tokens: chunks whose delta carries "content" (the role chunk's "" excluded).
        tokens += text.split('"delta":{"content":').length - 1;
        streams++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wall = (Date.now() - wallStart) / 1000;
  const cpu = cpuSeconds(child.pid!) - cpuStart;
  await pool.close();
  child.kill('SIGTERM');
  const round = (x: number): string => x.toFixed(0);
  process.stdout.write(
    `sim-target bench: ${seconds}s, ${concurrency} concurrent streams, 64 tokens each\n` +
      `  streams/s (wall)        ${round(streams / wall)}\n` +
      `  tokens/s (wall)         ${round(tokens / wall)}\n` +
      `  server CPU              ${((100 * cpu) / wall).toFixed(0)} % of one core\n` +
      `  tokens per CPU-second   ${round(tokens / cpu)}  (one core)\n` +
      `  streams per CPU-second  ${round(streams / cpu)}\n` +
      `  errors                  ${errors}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
