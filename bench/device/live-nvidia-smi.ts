// Runs the gpu-collector's nvidia-smi runner on this host a few times and prints what it read:
// health, then one line per normalised sample. For a GPU host (bench/device/check.sh).
//   node -r ./bench/ts-register.js bench/device/live-nvidia-smi.ts [TIMES=3] [INTERVAL_MS=1000]
import { runNvidiaSmi } from '../../libs/gpu/src/scrape/nvidia-smi.runner';

async function main(): Promise<void> {
  const times = Number(process.argv[2] ?? 3);
  const intervalMs = Number(process.argv[3] ?? 1000);
  for (let i = 0; i < times; i++) {
    const result = await runNvidiaSmi();
    console.log(`scrape ${i + 1}: ${result.health} in ${result.durationMs} ms${result.error ? `: ${result.error}` : ''}`);
    for (const s of result.samples) console.log(`  ${JSON.stringify(s)}`);
    if (i + 1 < times) await new Promise((r) => setTimeout(r, intervalMs));
  }
}

void main();
