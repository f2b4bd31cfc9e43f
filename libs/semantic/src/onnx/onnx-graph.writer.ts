/**
 * A minimal ONNX ModelProto writer: just enough protobuf to export a dense head
 * (MatMul + Add + Softmax over float tensors) without a protobuf dependency at run time.
 * Field numbers are onnx.proto's (ModelProto.graph = 7, GraphProto.node = 1, ...); the tests
 * decode the output with `onnx-proto` and run it with onnxruntime-node.
 */

class ProtoWriter {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.size += bytes.length;
  }

  varint(value: bigint | number): this {
    // int64 fields: negatives are 10-byte two's complement varints.
    let v = BigInt.asUintN(64, BigInt(value));
    const out: number[] = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) byte |= 0x80;
      out.push(byte);
    } while (v !== 0n);
    this.push(Uint8Array.from(out));
    return this;
  }

  intField(field: number, value: number | bigint): this {
    return this.varint((field << 3) | 0).varint(value);
  }

  bytesField(field: number, bytes: Uint8Array): this {
    this.varint((field << 3) | 2).varint(bytes.length);
    this.push(bytes);
    return this;
  }

  stringField(field: number, value: string): this {
    return this.bytesField(field, new TextEncoder().encode(value));
  }

  messageField(field: number, message: ProtoWriter): this {
    return this.bytesField(field, message.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let offset = 0;
    for (const c of this.chunks) {
      out.set(c, offset);
      offset += c.length;
    }
    return out;
  }
}

const FLOAT = 1; // TensorProto.DataType.FLOAT

/** A float tensor: `dims` row-major, values as float32 little-endian raw_data. */
export interface FloatInitializer {
  readonly name: string;
  readonly dims: readonly number[];
  readonly values: ArrayLike<number>;
}

export interface OnnxNode {
  readonly opType: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name?: string;
}

/** A float tensor input or output; a string dim is symbolic (e.g. `batch`). */
export interface FloatValueInfo {
  readonly name: string;
  readonly dims: readonly (number | string)[];
}

export interface OnnxGraphSpec {
  readonly name: string;
  readonly nodes: readonly OnnxNode[];
  readonly initializers: readonly FloatInitializer[];
  readonly inputs: readonly FloatValueInfo[];
  readonly outputs: readonly FloatValueInfo[];
  /** Default opset 13 (Softmax's axis defaults to -1 there). */
  readonly opset?: number;
  readonly producer?: string;
}

function tensor(init: FloatInitializer): ProtoWriter {
  const t = new ProtoWriter();
  for (const d of init.dims) t.intField(1, d);
  t.intField(2, FLOAT).stringField(8, init.name);
  const raw = new Uint8Array(init.values.length * 4);
  const view = new DataView(raw.buffer);
  for (let i = 0; i < init.values.length; i++) view.setFloat32(i * 4, init.values[i], true);
  return t.bytesField(9, raw);
}

function valueInfo(info: FloatValueInfo): ProtoWriter {
  const shape = new ProtoWriter();
  for (const d of info.dims) {
    const dim = new ProtoWriter();
    if (typeof d === 'number') dim.intField(1, d);
    else dim.stringField(2, d);
    shape.messageField(1, dim);
  }
  const tensorType = new ProtoWriter().intField(1, FLOAT).messageField(2, shape);
  const type = new ProtoWriter().messageField(1, tensorType);
  return new ProtoWriter().stringField(1, info.name).messageField(2, type);
}

/** Serialises a float-only ONNX graph to ModelProto bytes (IR version 8). */
export function writeOnnxModel(spec: OnnxGraphSpec): Uint8Array {
  const graph = new ProtoWriter();
  spec.nodes.forEach((n, i) => {
    const node = new ProtoWriter();
    for (const input of n.inputs) node.stringField(1, input);
    for (const output of n.outputs) node.stringField(2, output);
    node.stringField(3, n.name ?? `${n.opType}_${i}`).stringField(4, n.opType);
    graph.messageField(1, node);
  });
  graph.stringField(2, spec.name);
  for (const init of spec.initializers) graph.messageField(5, tensor(init));
  for (const input of spec.inputs) graph.messageField(11, valueInfo(input));
  for (const output of spec.outputs) graph.messageField(12, valueInfo(output));
  const opset = new ProtoWriter().stringField(1, '').intField(2, spec.opset ?? 13);
  return new ProtoWriter()
    .intField(1, 8)
    .stringField(2, spec.producer ?? 'fathom')
    .messageField(7, graph)
    .messageField(8, opset)
    .finish();
}
