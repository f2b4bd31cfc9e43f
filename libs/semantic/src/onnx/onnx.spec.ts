/**
 * @jest-environment ./libs/semantic/src/testing/ort.jest-environment.js
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onnx } from 'onnx-proto';
import {
  OnnxIntentClassifier,
  intentAccuracyVerdict,
  intentHeadToOnnx,
  trainNearestCentroidHead,
} from './intent-classifier';
import { OnnxSentenceEmbedder } from './onnx-sentence.embedder';
import { WorkerEmbedder } from '../embedding/worker.embedder';

/** Three well-separated intents in 8 dimensions, with noise. */
function cluster(centre: number, n: number, noise: number, seed: number): Float32Array[] {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 2;
  return Array.from({ length: n }, () =>
    Float32Array.from({ length: 8 }, (_, d) => (d === centre ? 1 : 0) + noise * rnd()),
  );
}

describe(trainNearestCentroidHead.name, () => {
  const labels = ['billing', 'refund', 'support'];
  const train = labels.flatMap((_, k) => cluster(k, 20, 0.3, k + 1));
  const trainLabels = labels.flatMap((l) => Array<string>(20).fill(l));

  it('exports MatMul + Add + Softmax that onnx-proto decodes', () => {
    const model = onnx.ModelProto.decode(intentHeadToOnnx(trainNearestCentroidHead(train, trainLabels)));
    expect(model.graph?.node?.map((n) => n.opType)).toEqual(['MatMul', 'Add', 'Softmax']);
    expect(model.graph?.initializer?.map((t) => t.dims?.map(Number))).toEqual([[8, 3], [3]]);
    expect(Number(model.opsetImport?.[0].version)).toBe(13);
  });

  it('classifies held-out embeddings with onnxruntime-node and flags an accuracy drop of 5 % or more', async () => {
    const head = trainNearestCentroidHead(train, trainLabels);
    const sut = await OnnxIntentClassifier.load(intentHeadToOnnx(head), head.labels, head.dimensions);
    const heldOut = labels.flatMap((_, k) => cluster(k, 10, 0.3, 100 + k));
    const heldLabels = labels.flatMap((l) => Array<string>(10).fill(l));
    const [p] = await sut.classify([heldOut[0]]);
    expect(p.label).toBe('billing');
    expect(p.probability).toBeGreaterThan(0.5);
    expect(await sut.accuracy(heldOut, heldLabels)).toBe(1);
    // A drifted run: a third of the responses now look like another intent.
    const shifted = heldOut.map((e, i) =>
      i % 3 === 0 ? cluster((labels.indexOf(heldLabels[i]) + 1) % 3, 1, 0.1, i)[0] : e,
    );
    const verdict = await intentAccuracyVerdict(
      sut,
      { embeddings: heldOut, labels: heldLabels },
      { embeddings: shifted, labels: heldLabels },
    );
    expect(verdict.baselineAccuracy).toBe(1);
    expect(verdict.drop).toBeGreaterThanOrEqual(0.05);
    expect(verdict.healthy).toBe(false);
    const same = await intentAccuracyVerdict(
      sut,
      { embeddings: heldOut, labels: heldLabels },
      { embeddings: heldOut, labels: heldLabels },
    );
    expect(same.healthy).toBe(true);
  });
});

describe(OnnxSentenceEmbedder.name, () => {
  let dir: string;
  const vocab = [
    '[PAD]',
    '[UNK]',
    '[CLS]',
    '[SEP]',
    'the',
    'cat',
    'dog',
    'sat',
    'ran',
    'stock',
    'market',
    '##s',
    'fell',
  ];
  const D = 4;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fathom-onnx-embed-'));
    // Tiny "encoder": last_hidden_state = Gather(table, input_ids). Animal words share a direction,
    // finance words another; special tokens are near zero.
    const table = vocab.flatMap((w) => {
      if (['cat', 'dog', 'sat', 'ran'].includes(w)) return [1, 0.2, 0, 0];
      if (['stock', 'market', 'fell', '##s'].includes(w)) return [0, 0, 1, 0.2];
      return [0.01, 0.01, 0.01, 0.01];
    });
    const int64 = onnx.TensorProto.DataType.INT64;
    const float = onnx.TensorProto.DataType.FLOAT;
    const dims = (...d: (number | string)[]) => ({
      dim: d.map((x) => (typeof x === 'number' ? { dimValue: x } : { dimParam: x })),
    });
    const model = onnx.ModelProto.create({
      irVersion: 8,
      opsetImport: [{ domain: '', version: 13 }],
      graph: {
        name: 'tiny-encoder',
        node: [
          { opType: 'Gather', input: ['table', 'input_ids'], output: ['last_hidden_state'], name: 'embed' },
        ],
        initializer: [{ name: 'table', dims: [vocab.length, D], dataType: float, floatData: table }],
        input: [
          { name: 'input_ids', type: { tensorType: { elemType: int64, shape: dims('batch', 'seq') } } },
          { name: 'attention_mask', type: { tensorType: { elemType: int64, shape: dims('batch', 'seq') } } },
        ],
        output: [
          {
            name: 'last_hidden_state',
            type: { tensorType: { elemType: float, shape: dims('batch', 'seq', D) } },
          },
        ],
      },
    });
    writeFileSync(join(dir, 'model.onnx'), onnx.ModelProto.encode(model).finish());
    const tokenizer = {
      version: '1.0',
      added_tokens: vocab.slice(0, 4).map((content, id) => ({
        id,
        content,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      })),
      normalizer: {
        type: 'BertNormalizer',
        clean_text: true,
        handle_chinese_chars: true,
        strip_accents: null,
        lowercase: true,
      },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
      model: {
        type: 'WordPiece',
        unk_token: '[UNK]',
        continuing_subword_prefix: '##',
        max_input_chars_per_word: 100,
        vocab: Object.fromEntries(vocab.map((w, i) => [w, i])),
      },
    };
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
    writeFileSync(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({
        model_max_length: 16,
        do_lower_case: true,
        cls_token: '[CLS]',
        sep_token: '[SEP]',
        unk_token: '[UNK]',
        pad_token: '[PAD]',
      }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('tokenizes with WordPiece, mean-pools over the mask and normalises', async () => {
    const sut = await OnnxSentenceEmbedder.fromFolder(dir);
    expect(sut.dimensions).toBe(D);
    const [cat, dog, markets, short] = await sut.embed([
      'The cat sat',
      'the DOG ran',
      'the markets fell',
      'cat',
    ]);
    const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i], 0);
    expect(cos(cat, cat)).toBeCloseTo(1, 5);
    expect(cos(cat, dog)).toBeGreaterThan(0.99);
    expect(cos(cat, markets)).toBeLessThan(0.2);
    // Padding in the batch (the short text) must not change its vector.
    const [alone] = await sut.embed(['cat']);
    expect(Array.from(short)).toEqual(Array.from(alone));
  });

  it('runs in a worker thread (WorkerEmbedder) with the in-thread vectors', async () => {
    const inThread = await OnnxSentenceEmbedder.fromFolder(dir);
    const sut = new WorkerEmbedder({ model: { kind: 'onnx', folder: dir } });
    try {
      await sut.ready();
      expect(sut.dimensions).toBe(D);
      expect(sut.name).toBe(inThread.name);
      const input = ['The cat sat', 'the markets fell', 'dog'];
      const [fromWorker, reference] = [await sut.embed(input), await inThread.embed(input)];
      // onnxruntime-node runs outside jest's vm context there: no typed-array workaround needed.
      fromWorker.forEach((v, i) => expect(Array.from(v)).toEqual(Array.from(reference[i])));
    } finally {
      await sut.close();
    }
  });
});
