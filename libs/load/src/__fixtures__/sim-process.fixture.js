// Runs @fathom/sim in its own process, so that timing tests measure the client and not two event
// loops sharing one thread. TypeScript is compiled on require with @swc/core (as jest does).
// Prints one JSON line {"url": ...} when listening; exits when stdin closes.
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const swc = require('@swc/core');

require.extensions['.ts'] = (module, filename) => {
  const { code } = swc.transformSync(readFileSync(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};

const { startSimTarget } = require(join(__dirname, '../../../sim/src/index.ts'));
const config = JSON.parse(process.argv[2] ?? '{}');
startSimTarget({ port: 0, host: '127.0.0.1', config }).then((sim) => {
  process.stdout.write(`${JSON.stringify({ url: sim.url })}\n`);
  process.stdin.on('end', () => sim.close().then(() => process.exit(0)));
  process.stdin.resume();
});
