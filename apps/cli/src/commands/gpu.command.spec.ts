import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { GPU_TEXT_FORMATS } from '@fathom/gpu';
import { CliExit } from '../cli-exit';
import { GPU_FORMAT_CHOICES, registerGpuCommand } from './gpu.command';

const ROOT = join(__dirname, '..', '..', '..', '..');
const FIXTURES = join(ROOT, 'libs', 'gpu', 'src', '__fixtures__');

async function run(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const program = new Command('fathom').exitOverride();
  registerGpuCommand(program);
  let stdout = '';
  let stderr = '';
  const out = jest
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk) => ((stdout += String(chunk)), true));
  const err = jest
    .spyOn(process.stderr, 'write')
    .mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    await program.parseAsync(['node', 'fathom', 'gpu', 'parse', ...args]);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return { stdout, stderr };
}

const lines = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('gpu parse', () => {
  it('offers --format auto and every format @fathom/gpu parses, in its order', () => {
    expect(GPU_FORMAT_CHOICES).toEqual(['auto', ...GPU_TEXT_FORMATS]);
  });

  it('prints one JSON object per sample with exactly the six keys', async () => {
    const { stdout } = await run(join(FIXTURES, 'dcgm', 'dcgm-exporter-sample-h100-8gpu-k8s.prom'));
    const objects = lines(stdout);
    expect(objects).toHaveLength(30);
    for (const o of objects)
      expect(Object.keys(o)).toEqual(['source', 'gpu', 'instance', 'metric', 'value', 'unit']);
    expect(objects).toContainEqual({
      source: 'dcgm',
      gpu: 'GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005',
      instance: null,
      metric: 'power_w',
      value: 113.611,
      unit: 'W',
    });
  });

  it('honours --format and reads MIG instances from XML', async () => {
    const { stdout } = await run(
      join(FIXTURES, 'nvidia-smi', 'telegraf__nvidia_smi__testdata__a100-sxm4-v12.xml'),
      '--format',
      'nvidia-smi-xml',
    );
    expect(lines(stdout)).toContainEqual({
      source: 'nvidia-smi-xml',
      gpu: 'GPU-513536b6-7d19-9063-b049-1e69664bb298',
      instance: '3',
      metric: 'fb_used_mib',
      value: 12,
      unit: 'MiB',
    });
  });

  it('exits 2 with the reason when the file is not a supported format', async () => {
    await expect(run(join(FIXTURES, 'vllm', 'vllm-metrics-catalog.json'))).rejects.toThrow(CliExit);
    await expect(run(join(FIXTURES, 'vllm', 'vllm-metrics-catalog.json'))).rejects.toMatchObject({
      code: 2,
      message: expect.stringContaining('JSON'),
    });
  });

  it('exits 1 for a missing file', async () => {
    await expect(run(join(FIXTURES, 'nope.prom'))).rejects.toMatchObject({ code: 1 });
  });

  it('rejects an unknown --format value', async () => {
    await expect(
      run(join(FIXTURES, 'dcgm', 'dcgm-exporter-sample-h100-8gpu-k8s.prom'), '--format', 'csv'),
    ).rejects.toThrow();
  });

  it('says on stderr when a valid exposition has nothing it knows', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fathom-gpu-')), 'other.prom');
    writeFileSync(path, 'go_goroutines 40\n');
    const { stdout, stderr } = await run(path);
    expect(stdout).toBe('');
    expect(stderr).toContain('no GPU or inference-server metric');
  });

  it('works through the fathom binary (which compiles when stale), and fails it with a message on stderr', () => {
    const ok = spawnSync(
      process.execPath,
      [
        join(ROOT, 'bin', 'fathom.js'),
        'gpu',
        'parse',
        join(FIXTURES, 'nvidia-smi', 'h100-query-gpu-full-load.csv'),
      ],
      { encoding: 'utf8' },
    );
    expect(ok.status).toBe(0);
    expect(lines(ok.stdout)).toContainEqual({
      source: 'nvidia-smi-csv',
      gpu: 'GPU-00000000-0000-0000-0000-000000000000',
      instance: null,
      metric: 'power_w',
      value: 631.95,
      unit: 'W',
    });
    const bad = spawnSync(
      process.execPath,
      [join(ROOT, 'bin', 'fathom.js'), 'gpu', 'parse', join(FIXTURES, 'vllm', 'vllm-metrics-catalog.json')],
      { encoding: 'utf8' },
    );
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/fathom: gpu parse: .*unrecognised format/);
    expect(bad.stdout).toBe('');
  });
});
