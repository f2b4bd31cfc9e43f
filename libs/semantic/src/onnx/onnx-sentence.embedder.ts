import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Embedder } from '../embedding/embedder';

type OrtModule = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<OrtModule['InferenceSession']['create']>>;
interface HfTokenizer {
  encode(
    text: string,
    options?: { add_special_tokens?: boolean },
  ): { ids: number[]; attention_mask: number[] };
}

export interface OnnxSentenceEmbedderOptions {
  /** Tokens per text after special tokens; longer texts are truncated (keeps [SEP] last). */
  readonly maxTokens?: number;
  readonly batchSize?: number;
}

/**
 * A sentence-transformers ONNX export in a local folder (all-MiniLM-L6-v2, bge, e5, ...):
 * `model.onnx` (or `onnx/model.onnx`), `tokenizer.json` and `tokenizer_config.json`, tokenized
 * by `@huggingface/tokenizers` (WordPiece for these models) and run by onnxruntime-node on CPU.
 * Output: the model's pooled output when it has a rank-2 one (`sentence_embedding`), else the
 * attention-masked mean of `last_hidden_state`, L2-normalised (sentence-transformers' pooling).
 */
export class OnnxSentenceEmbedder implements Embedder {
  readonly name: string;

  private constructor(
    private readonly ort: OrtModule,
    private readonly session: Session,
    private readonly tokenizer: HfTokenizer,
    readonly dimensions: number,
    private readonly options: Required<OnnxSentenceEmbedderOptions>,
    folder: string,
  ) {
    this.name = `onnx:${folder}`;
  }

  static async fromFolder(
    folder: string,
    options: OnnxSentenceEmbedderOptions = {},
  ): Promise<OnnxSentenceEmbedder> {
    const modelPath = [join(folder, 'model.onnx'), join(folder, 'onnx', 'model.onnx')].find((p) =>
      existsSync(p),
    );
    if (!modelPath) throw new Error(`no model.onnx or onnx/model.onnx in ${folder}`);
    const tokenizerJson = JSON.parse(readFileSync(join(folder, 'tokenizer.json'), 'utf8')) as object;
    const configPath = join(folder, 'tokenizer_config.json');
    const tokenizerConfig = existsSync(configPath)
      ? (JSON.parse(readFileSync(configPath, 'utf8')) as { model_max_length?: number })
      : {};
    const { Tokenizer } = await import('@huggingface/tokenizers');
    const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig) as unknown as HfTokenizer;
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(modelPath);
    const maxTokens = options.maxTokens ?? Math.min(512, tokenizerConfig.model_max_length ?? 256);
    const resolved = { maxTokens, batchSize: options.batchSize ?? 16 };
    // Probe once for the width: a model's dims are often symbolic in its metadata.
    const probe = new OnnxSentenceEmbedder(ort, session, tokenizer, 0, resolved, folder);
    const [vector] = await probe.embedBatch(['dimension probe']);
    return new OnnxSentenceEmbedder(ort, session, tokenizer, vector.length, resolved, folder);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.options.batchSize)
      out.push(...(await this.embedBatch(texts.slice(i, i + this.options.batchSize))));
    return out;
  }

  private async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const encoded = texts.map((t) => {
      const e = this.tokenizer.encode(t);
      if (e.ids.length <= this.options.maxTokens) return e.ids;
      // Keep the closing special token the post-processor added.
      return [...e.ids.slice(0, this.options.maxTokens - 1), e.ids[e.ids.length - 1]];
    });
    const length = Math.max(1, ...encoded.map((ids) => ids.length));
    const ids = new BigInt64Array(texts.length * length);
    const mask = new BigInt64Array(texts.length * length);
    encoded.forEach((row, b) =>
      row.forEach((id, t) => {
        ids[b * length + t] = BigInt(id);
        mask[b * length + t] = 1n;
      }),
    );
    const shape = [texts.length, length];
    const feeds: Record<string, InstanceType<OrtModule['Tensor']>> = {};
    for (const name of this.session.inputNames) {
      if (name === 'input_ids') feeds[name] = new this.ort.Tensor('int64', ids, shape);
      else if (name === 'attention_mask') feeds[name] = new this.ort.Tensor('int64', mask, shape);
      else if (name === 'token_type_ids')
        feeds[name] = new this.ort.Tensor('int64', new BigInt64Array(ids.length), shape);
      else throw new Error(`ONNX embedder: unexpected model input ${name}`);
    }
    const result = await this.session.run(feeds);
    const pooledName = this.session.outputNames.find((n) => result[n].dims.length === 2);
    if (pooledName) {
      const t = result[pooledName];
      const d = t.dims[1];
      const data = t.data as Float32Array;
      return texts.map((_, b) => normalised(data.subarray(b * d, (b + 1) * d)));
    }
    const hidden =
      result[
        this.session.outputNames.includes('last_hidden_state')
          ? 'last_hidden_state'
          : this.session.outputNames[0]
      ];
    if (hidden.dims.length !== 3)
      throw new Error(`ONNX embedder: output of rank ${hidden.dims.length}, expected 2 or 3`);
    const [, seq, d] = hidden.dims;
    const data = hidden.data as Float32Array;
    return encoded.map((row, b) => {
      const mean = new Float32Array(d);
      const n = Math.min(row.length, seq);
      for (let t = 0; t < n; t++) for (let k = 0; k < d; k++) mean[k] += data[(b * seq + t) * d + k];
      for (let k = 0; k < d; k++) mean[k] /= Math.max(1, n);
      return normalised(mean);
    });
  }
}

function normalised(v: Float32Array): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i] * v[i];
  const out = Float32Array.from(v);
  if (n > 0) for (let i = 0; i < out.length; i++) out[i] /= Math.sqrt(n);
  return out;
}
