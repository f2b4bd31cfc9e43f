// Runs @fathom/sim in its own process, so that timing tests measure the client and not two event
// loops sharing one thread. TypeScript is compiled on require by the workspace's one bootstrap.
// Prints one JSON line {"url": ...} when listening; exits when stdin closes.
'use strict';
const { join } = require('node:path');

require(join(__dirname, '../../../testing/src/ts-register.js'));

const { startSimTarget } = require(join(__dirname, '../../../sim/src/index.ts'));
const config = JSON.parse(process.argv[2] ?? '{}');
startSimTarget({ port: 0, host: '127.0.0.1', config }).then((sim) => {
  process.stdout.write(`${JSON.stringify({ url: sim.url })}\n`);
  process.stdin.on('end', () => sim.close().then(() => process.exit(0)));
  process.stdin.resume();
});
