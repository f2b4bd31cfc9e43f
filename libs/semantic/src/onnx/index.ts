export * from './onnx-graph.writer';
export * from './intent-classifier';
export * from './onnx-sentence.embedder';
