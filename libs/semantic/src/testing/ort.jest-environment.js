// Jest runs each test file in its own vm context, so its typed-array constructors differ from
// the ones onnxruntime-node's native binding returns, and onnxruntime-common's
// `data instanceof Float32Array` check fails ("A float32 tensor's data must be type of ...").
// Test files that run ONNX models opt in with `@jest-environment` and get the host's typed arrays.
const { TestEnvironment } = require('jest-environment-node');

class OrtTestEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of [
      'Float32Array',
      'Float64Array',
      'Int8Array',
      'Uint8Array',
      'Int16Array',
      'Uint16Array',
      'Int32Array',
      'Uint32Array',
      'BigInt64Array',
      'BigUint64Array',
      'ArrayBuffer',
    ]) {
      this.global[name] = globalThis[name];
    }
  }
}

module.exports = OrtTestEnvironment;
