import { writeOnnxModel } from '../onnx/onnx-graph.writer';
import { ANOMALY_LABELS, type AnomalyLabel } from './anomaly.rules';
import {
  FRAGMENT_FEATURES,
  fragmentFeatures,
  writeDense,
  type SparseFeatures,
} from './fragment-features.util';
import type { LabelledFragment } from './anomaly-corpus';

/** A softmax-regression head over fragment features: probabilities = softmax(x W + b). */
export interface AnomalyHead {
  readonly labels: readonly string[];
  readonly dimensions: number;
  /** Row-major [dimensions x labels]. */
  readonly weights: Float32Array;
  readonly bias: Float32Array;
}

export interface AnomalyTrainingOptions {
  readonly epochs?: number;
  readonly learningRate?: number;
  /** L2 penalty per step, applied lazily to the touched rows (keeps the sparse update cheap). */
  readonly l2?: number;
}

/**
 * Trains multinomial logistic regression with plain SGD over the examples in their given order
 * (the corpus is shuffled by its seed): deterministic, a second or so on one core for the
 * bundled corpus. Float64 while training, float32 in the head.
 */
export function trainAnomalyHead(
  examples: readonly LabelledFragment[],
  options: AnomalyTrainingOptions = {},
): AnomalyHead {
  if (examples.length === 0) throw new Error('trainAnomalyHead: no examples');
  const epochs = options.epochs ?? 25;
  const rate0 = options.learningRate ?? 0.5;
  const l2 = options.l2 ?? 1e-5;
  const c = ANOMALY_LABELS.length;
  const d = FRAGMENT_FEATURES;
  const w = new Float64Array(d * c);
  const b = new Float64Array(c);
  const xs = examples.map((e) => fragmentFeatures(e.text));
  const ys = examples.map((e) => {
    const k = ANOMALY_LABELS.indexOf(e.label);
    if (k < 0) throw new Error(`trainAnomalyHead: unknown label ${e.label}`);
    return k;
  });
  const logits = new Float64Array(c);
  for (let epoch = 0; epoch < epochs; epoch++) {
    const rate = rate0 / (1 + epoch / 5);
    for (let n = 0; n < xs.length; n++) {
      const x = xs[n];
      softmaxInto(x, w, b, logits);
      logits[ys[n]] -= 1; // gradient of the cross-entropy w.r.t. the logits
      for (let k = 0; k < c; k++) b[k] -= rate * logits[k];
      for (let i = 0; i < x.indices.length; i++) {
        const row = x.indices[i] * c;
        const v = x.values[i];
        for (let k = 0; k < c; k++) w[row + k] -= rate * (logits[k] * v + l2 * w[row + k]);
      }
    }
  }
  return {
    labels: [...ANOMALY_LABELS],
    dimensions: d,
    weights: Float32Array.from(w),
    bias: Float32Array.from(b),
  };
}

function softmaxInto(x: SparseFeatures, w: Float64Array, b: Float64Array, out: Float64Array): void {
  const c = out.length;
  out.set(b);
  for (let i = 0; i < x.indices.length; i++) {
    const row = x.indices[i] * c;
    for (let k = 0; k < c; k++) out[k] += w[row + k] * x.values[i];
  }
  let max = -Infinity;
  for (let k = 0; k < c; k++) max = Math.max(max, out[k]);
  let sum = 0;
  for (let k = 0; k < c; k++) sum += out[k] = Math.exp(out[k] - max);
  for (let k = 0; k < c; k++) out[k] /= sum;
}

/** The head as ONNX: `features` [batch, D] -> MatMul -> Add -> Softmax -> `probabilities` [batch, C]. */
export function anomalyHeadToOnnx(head: AnomalyHead): Uint8Array {
  const c = head.labels.length;
  return writeOnnxModel({
    name: 'fathom-anomaly-head',
    nodes: [
      { opType: 'MatMul', inputs: ['features', 'W'], outputs: ['logits_raw'] },
      { opType: 'Add', inputs: ['logits_raw', 'B'], outputs: ['logits'] },
      { opType: 'Softmax', inputs: ['logits'], outputs: ['probabilities'] },
    ],
    initializers: [
      { name: 'W', dims: [head.dimensions, c], values: head.weights },
      { name: 'B', dims: [c], values: head.bias },
    ],
    inputs: [{ name: 'features', dims: ['batch', head.dimensions] }],
    outputs: [{ name: 'probabilities', dims: ['batch', c] }],
  });
}

export interface AnomalyScore {
  /** The most probable anomaly class (never `normal`). */
  readonly label: Exclude<AnomalyLabel, 'normal'>;
  /** 1 - P(normal): the model's confidence that the fragment is anomalous at all. */
  readonly confidence: number;
}

type OrtModule = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<OrtModule['InferenceSession']['create']>>;

/**
 * Runs an anomaly head with onnxruntime-node on CPU: ours (`anomaly-head.onnx`, rebuilt by
 * `npm run model:anomaly`) or a user's retrained one with the same contract: one float input
 * [batch, FRAGMENT_FEATURES] from `fragmentFeatures`, first output [batch, 6] probabilities in
 * ANOMALY_LABELS order. `load` checks the contract with a probe batch and throws if it is not met.
 */
export class OnnxAnomalyHead {
  private constructor(
    private readonly ort: OrtModule,
    private readonly session: Session,
  ) {}

  static async load(model: Uint8Array | string): Promise<OnnxAnomalyHead> {
    const ort = await import('onnxruntime-node');
    // One thread: the head is a 2048 x 6 MatMul, smaller than the cost of waking a thread pool,
    // and the monitor shares its host with the load it measures.
    const options = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' } as const;
    const session =
      typeof model === 'string'
        ? await ort.InferenceSession.create(model, options)
        : await ort.InferenceSession.create(model, options);
    const head = new OnnxAnomalyHead(ort, session);
    try {
      const probe = await head.run(new Float32Array(FRAGMENT_FEATURES), 1);
      if (probe.length !== ANOMALY_LABELS.length)
        throw new Error(
          `anomaly model gives ${probe.length} outputs per fragment, expected ${ANOMALY_LABELS.length} (${ANOMALY_LABELS.join(', ')})`,
        );
    } catch (error) {
      await session.release();
      throw error;
    }
    return head;
  }

  /** One score per feature vector, in order; one session run for the whole batch. */
  async score(features: readonly SparseFeatures[]): Promise<AnomalyScore[]> {
    if (features.length === 0) return [];
    const dense = new Float32Array(features.length * FRAGMENT_FEATURES);
    features.forEach((f, i) => writeDense(f, dense, i));
    const probs = await this.run(dense, features.length);
    const c = ANOMALY_LABELS.length;
    return features.map((_, i) => {
      let best = 1;
      for (let k = 2; k < c; k++) if (probs[i * c + k] > probs[i * c + best]) best = k;
      const normal = probs[i * c];
      if (!Number.isFinite(normal)) throw new Error('anomaly model gave a non-finite probability');
      return {
        label: ANOMALY_LABELS[best] as Exclude<AnomalyLabel, 'normal'>,
        confidence: Math.min(1, Math.max(0, 1 - normal)),
      };
    });
  }

  private async run(dense: Float32Array, rows: number): Promise<Float32Array> {
    const input = new this.ort.Tensor('float32', dense, [rows, FRAGMENT_FEATURES]);
    const result = await this.session.run({ [this.session.inputNames[0]]: input });
    return result[this.session.outputNames[0]].data as Float32Array;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** Trains on `examples` and exports: the bytes of `anomaly-head.onnx`. */
export function buildAnomalyModel(examples: readonly LabelledFragment[]): Uint8Array {
  return anomalyHeadToOnnx(trainAnomalyHead(examples));
}
