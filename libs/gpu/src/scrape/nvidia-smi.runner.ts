import { execFile } from 'node:child_process';
import { NVIDIA_SMI_QUERY_FIELDS, parseNvidiaSmiCsv } from '../sources/nvidia-smi-csv.parser';
import { GpuParseError } from '../model/gpu-parse.error';
import type { ScrapeResult } from './scrape-source';

export interface NvidiaSmiRunOptions {
  /** Binary to run; `nvidia-smi` from PATH by default. */
  readonly binary?: string;
  readonly timeoutMs?: number;
}

/** The arguments the runner passes: query-gpu CSV with units, header included. */
export function nvidiaSmiArgs(): string[] {
  return [`--query-gpu=${NVIDIA_SMI_QUERY_FIELDS.join(',')}`, '--format=csv'];
}

/**
 * Runs `nvidia-smi --query-gpu=... --format=csv` on this host (for a collector on a GPU host)
 * and parses its output. Never throws: a missing binary or a driver error is `down`, a hang is
 * `timeout`, unreadable output is `garbage`, each with no samples.
 */
export function runNvidiaSmi(options: NvidiaSmiRunOptions = {}): Promise<ScrapeResult> {
  const binary = options.binary ?? 'nvidia-smi';
  const timeoutMs = options.timeoutMs ?? 10_000;
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      binary,
      nvidiaSmiArgs(),
      { timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => {
        const durationMs = Date.now() - started;
        const gap = (health: 'down' | 'timeout' | 'garbage', message: string): ScrapeResult => ({
          health,
          samples: [],
          error: message,
          durationMs,
        });
        if (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ENOENT')
            return resolve(gap('down', `${binary} not found: no NVIDIA driver tools on this host`));
          if (code === 'EACCES') return resolve(gap('down', `${binary} is not executable`));
          if (error.killed || error.signal === 'SIGTERM')
            return resolve(gap('timeout', `${binary} did not finish within ${timeoutMs} ms`));
          const detail = `${String(stderr).trim() || String(stdout).trim()}`.split('\n')[0];
          return resolve(
            gap(
              'down',
              `${binary} exited with ${String(code ?? error.signal)}${detail ? `: ${detail}` : ''}`,
            ),
          );
        }
        try {
          resolve({ health: 'ok', samples: parseNvidiaSmiCsv(String(stdout)), durationMs });
        } catch (parseError) {
          if (parseError instanceof GpuParseError)
            return resolve(gap('garbage', `${binary}: ${parseError.message}`));
          resolve(gap('garbage', `${binary}: ${String(parseError)}`));
        }
      },
    );
  });
}
