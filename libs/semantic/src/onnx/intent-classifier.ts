import { writeOnnxModel } from './onnx-graph.writer';
import { intentAccuracyDrop } from '../embedding/embedding-drift.util';

/** A dense intent head: probabilities = softmax(embedding x weights + bias). */
export interface IntentHead {
  readonly labels: readonly string[];
  readonly dimensions: number;
  /** Row-major [dimensions x labels]. */
  readonly weights: Float32Array;
  readonly bias: Float32Array;
}

/**
 * Nearest-centroid head trained on baseline embeddings, as a linear layer: for L2-normalised
 * inputs, argmin_k |x - mu_k|^2 = argmax_k (x . mu_k - |mu_k|^2 / 2), so W's column k is mu_k and
 * b_k = -|mu_k|^2 / 2. `temperature` scales the logits (sharper softmax below 1); it never
 * changes the argmax. Inputs are normalised here, and the classifier normalises before running.
 */
export function trainNearestCentroidHead(
  embeddings: readonly ArrayLike<number>[],
  labels: readonly string[],
  temperature = 0.05,
): IntentHead {
  if (embeddings.length === 0 || embeddings.length !== labels.length) {
    throw new Error('trainNearestCentroidHead: need one label per embedding, at least one');
  }
  const dimensions = embeddings[0].length;
  const classes = [...new Set(labels)].sort();
  const sums = classes.map(() => new Float64Array(dimensions));
  const counts = new Array<number>(classes.length).fill(0);
  embeddings.forEach((e, i) => {
    if (e.length !== dimensions)
      throw new Error(`embedding ${i} has ${e.length} dimensions, expected ${dimensions}`);
    const k = classes.indexOf(labels[i]);
    const unit = normalise(e);
    for (let d = 0; d < dimensions; d++) sums[k][d] += unit[d];
    counts[k]++;
  });
  const weights = new Float32Array(dimensions * classes.length);
  const bias = new Float32Array(classes.length);
  classes.forEach((_, k) => {
    let norm2 = 0;
    for (let d = 0; d < dimensions; d++) {
      const mu = sums[k][d] / counts[k];
      weights[d * classes.length + k] = mu / temperature;
      norm2 += mu * mu;
    }
    bias[k] = -norm2 / 2 / temperature;
  });
  return { labels: classes, dimensions, weights, bias };
}

/** The head as ONNX: input `embedding` [batch, D] -> MatMul -> Add -> Softmax -> `probabilities` [batch, C]. */
export function intentHeadToOnnx(head: IntentHead): Uint8Array {
  const c = head.labels.length;
  return writeOnnxModel({
    name: 'fathom-intent-head',
    nodes: [
      { opType: 'MatMul', inputs: ['embedding', 'W'], outputs: ['logits_raw'] },
      { opType: 'Add', inputs: ['logits_raw', 'B'], outputs: ['logits'] },
      { opType: 'Softmax', inputs: ['logits'], outputs: ['probabilities'] },
    ],
    initializers: [
      { name: 'W', dims: [head.dimensions, c], values: head.weights },
      { name: 'B', dims: [c], values: head.bias },
    ],
    inputs: [{ name: 'embedding', dims: ['batch', head.dimensions] }],
    outputs: [{ name: 'probabilities', dims: ['batch', c] }],
  });
}

export interface IntentPrediction {
  readonly label: string;
  readonly probability: number;
}

type OrtModule = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<OrtModule['InferenceSession']['create']>>;

/**
 * Runs an intent head with onnxruntime-node: ours from `intentHeadToOnnx`, or a user's own
 * classifier with the same contract (one float input [batch, D], first output [batch, C]
 * probabilities or logits; argmax is the label).
 */
export class OnnxIntentClassifier {
  private constructor(
    private readonly ort: OrtModule,
    private readonly session: Session,
    readonly labels: readonly string[],
    readonly dimensions: number,
  ) {}

  static async load(
    model: Uint8Array | string,
    labels: readonly string[],
    dimensions: number,
  ): Promise<OnnxIntentClassifier> {
    const ort = await import('onnxruntime-node');
    const session =
      typeof model === 'string'
        ? await ort.InferenceSession.create(model)
        : await ort.InferenceSession.create(model);
    return new OnnxIntentClassifier(ort, session, labels, dimensions);
  }

  async classify(embeddings: readonly ArrayLike<number>[]): Promise<IntentPrediction[]> {
    if (embeddings.length === 0) return [];
    const flat = new Float32Array(embeddings.length * this.dimensions);
    embeddings.forEach((e, i) => flat.set(normalise(e), i * this.dimensions));
    const input = new this.ort.Tensor('float32', flat, [embeddings.length, this.dimensions]);
    const result = await this.session.run({ [this.session.inputNames[0]]: input });
    const probs = result[this.session.outputNames[0]].data as Float32Array;
    const c = this.labels.length;
    return embeddings.map((_, i) => {
      let best = 0;
      for (let k = 1; k < c; k++) if (probs[i * c + k] > probs[i * c + best]) best = k;
      return { label: this.labels[best], probability: probs[i * c + best] };
    });
  }

  /** Share of embeddings classified as their label. */
  async accuracy(embeddings: readonly ArrayLike<number>[], labels: readonly string[]): Promise<number> {
    if (embeddings.length === 0) return 0;
    const predictions = await this.classify(embeddings);
    return predictions.filter((p, i) => p.label === labels[i]).length / predictions.length;
  }
}

export interface IntentAccuracyVerdict {
  readonly baselineAccuracy: number;
  readonly currentAccuracy: number;
  /** Relative drop; unhealthy at 5 % or more (spec, monitoring matrix). */
  readonly drop: number;
  readonly healthy: boolean;
}

/** Intent-recognition accuracy of a run's labelled responses against the baseline's, through one head. */
export async function intentAccuracyVerdict(
  classifier: OnnxIntentClassifier,
  baseline: { embeddings: readonly ArrayLike<number>[]; labels: readonly string[] },
  current: { embeddings: readonly ArrayLike<number>[]; labels: readonly string[] },
): Promise<IntentAccuracyVerdict> {
  const baselineAccuracy = await classifier.accuracy(baseline.embeddings, baseline.labels);
  const currentAccuracy = await classifier.accuracy(current.embeddings, current.labels);
  return { baselineAccuracy, currentAccuracy, ...intentAccuracyDrop(baselineAccuracy, currentAccuracy) };
}

function normalise(v: ArrayLike<number>): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i] * v[i];
  const s = n > 0 ? 1 / Math.sqrt(n) : 0;
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i] * s;
  return out;
}
