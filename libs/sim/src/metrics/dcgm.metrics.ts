import { performance } from 'node:perf_hooks';
import type { ServingEngine } from '../engine/serving.engine';

// One simulated H100 SXM (80 GB HBM3: 81,559 MiB framebuffer, 700 W TDP, ~70 W idle).
const FB_TOTAL_MIB = 81559;
const FB_RESERVED_MIB = 552;
// An 8B fp16 model: 16 GiB of weights + ~2 GiB runtime/activations.
const WEIGHTS_MIB = 16384 + 2048;
// KV bytes per token for an 8B GQA model: 32 layers x 8 KV heads x 128 dims x 2 (K,V) x 2 bytes = 128 KiB.
const KV_MIB_PER_TOKEN = 0.125;
const IDLE_W = 70;
const TDP_W = 700;

const LABELS =
  'gpu="0",UUID="GPU-5f1a7c3e-0d2b-4e8a-9c61-fa7e0d5e1a01",pci_bus_id="00000000:53:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="fathom-sim",DCGM_FI_DRIVER_VERSION="580.105.08"';

/**
 * dcgm-exporter exposition for one GPU whose values follow the serving engine:
 *  util         = engine busy time / elapsed time since the previous scrape (0..1)
 *  DRAM active  = util x (0.3 + 0.6 x batch fill)  (decode is memory-bound: more sequences, more KV reads)
 *  SM active    = util x (0.55 + 0.4 x prefill share of the last step's tokens)
 *  power (W)    = 70 + 630 x (0.5 SM active + 0.5 DRAM active)
 *  FB used MiB  = weights + runtime + KV tokens in use x 0.125 MiB
 *    (a simplification: vLLM pre-allocates its KV pool, so a real FB_USED stays flat).
 * Field names, units and help strings follow dcgm-exporter's etc/default-counters.csv and
 * dcp-metrics-included.csv (see /work/shared/fixtures/dcgm/).
 */
export class DcgmMetrics {
  private lastBusyMs = 0;
  private lastModelMs: number;
  private lastWallMs = performance.now();
  private energyMj = 0;

  constructor(
    private readonly engine: ServingEngine,
    private readonly maxNumSeqs: number,
    private readonly blockSize: number,
  ) {
    this.lastModelMs = engine.clock.now();
  }

  render(): string {
    const s = this.engine.snapshot();
    const nowModel = this.engine.clock.now();
    const nowWall = performance.now();
    const elapsed = nowModel - this.lastModelMs;
    const util = elapsed > 0 ? Math.min(1, Math.max(0, (s.busyMs - this.lastBusyMs) / elapsed)) : 0;
    const fill = Math.min(1, s.lastStepDecodeSeqs / this.maxNumSeqs);
    const prefillShare =
      s.lastStepTokens > 0 ? (s.lastStepTokens - s.lastStepDecodeSeqs) / s.lastStepTokens : 0;
    const dram = util * (0.3 + 0.6 * fill);
    const sm = util * (0.55 + 0.4 * prefillShare);
    const power = IDLE_W + (TDP_W - IDLE_W) * (0.5 * sm + 0.5 * dram);
    this.energyMj += power * (nowWall - this.lastWallMs); // W x ms = mJ
    this.lastBusyMs = s.busyMs;
    this.lastModelMs = nowModel;
    this.lastWallMs = nowWall;
    const fbUsed = Math.round(
      WEIGHTS_MIB + s.kvUsage * s.kvCapacityBlocks * this.blockSize * KV_MIB_PER_TOKEN,
    );
    const rows: [string, string, string, string][] = [
      ['DCGM_FI_DEV_SM_CLOCK', 'gauge', 'SM clock frequency (in MHz).', '1980'],
      ['DCGM_FI_DEV_MEM_CLOCK', 'gauge', 'Memory clock frequency (in MHz).', '2619'],
      [
        'DCGM_FI_DEV_GPU_TEMP',
        'gauge',
        'GPU temperature (in C).',
        String(Math.round(30 + (45 * (power - IDLE_W)) / (TDP_W - IDLE_W))),
      ],
      ['DCGM_FI_DEV_POWER_USAGE', 'gauge', 'Power draw (in W).', power.toFixed(6)],
      [
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION',
        'counter',
        'Total energy consumption since boot (in mJ).',
        String(Math.round(this.energyMj)),
      ],
      ['DCGM_FI_DEV_GPU_UTIL', 'gauge', 'GPU utilization (in %).', String(Math.round(util * 100))],
      ['DCGM_FI_DEV_MEM_COPY_UTIL', 'gauge', 'Memory utilization (in %).', String(Math.round(dram * 100))],
      [
        'DCGM_FI_DEV_FB_FREE',
        'gauge',
        'Framebuffer memory free (in MiB).',
        String(FB_TOTAL_MIB - FB_RESERVED_MIB - fbUsed),
      ],
      ['DCGM_FI_DEV_FB_USED', 'gauge', 'Framebuffer memory used (in MiB).', String(fbUsed)],
      ['DCGM_FI_DEV_FB_RESERVED', 'gauge', 'Framebuffer memory reserved (in MiB).', String(FB_RESERVED_MIB)],
      [
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
        'gauge',
        'Ratio of time the graphics engine is active.',
        util.toFixed(6),
      ],
      [
        'DCGM_FI_PROF_SM_ACTIVE',
        'gauge',
        'The ratio of cycles an SM has at least 1 warp assigned.',
        sm.toFixed(6),
      ],
      [
        'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE',
        'gauge',
        'Ratio of cycles the tensor (HMMA) pipe is active.',
        (sm * 0.6).toFixed(6),
      ],
      [
        'DCGM_FI_PROF_DRAM_ACTIVE',
        'gauge',
        'Ratio of cycles the device memory interface is active sending or receiving data.',
        dram.toFixed(6),
      ],
    ];
    return rows
      .map(
        ([name, type, help, value]) =>
          `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name}{${LABELS}} ${value}\n`,
      )
      .join('');
  }
}
