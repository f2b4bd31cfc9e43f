// One require hook for every bench: plain `node -r ./bench/ts-register.js bench/x.bench.ts` runs the
// workspace's TypeScript from source. @swc/core (already a dependency) transpiles each .ts file
// with the workspace .swcrc (decorator metadata kept, @fathom/* paths rewritten); bare
// `@fathom/<lib>` requests from .js files resolve to libs/<lib>/src/index.ts.
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const Module = require('node:module');

const root = path.join(__dirname, '..');
const swc = require(path.join(root, 'node_modules/@swc/core'));
const swcrc = JSON.parse(fs.readFileSync(path.join(root, '.swcrc'), 'utf8'));
delete swcrc.$schema;
swcrc.jsc.baseUrl = root;

require.extensions['.ts'] = (module, filename) =>
  module._compile(
    swc.transformSync(fs.readFileSync(filename, 'utf8'), { ...swcrc, filename, swcrc: false, sourceMaps: 'inline' }).code,
    filename,
  );

const resolve = Module._resolveFilename;
Module._resolveFilename = function resolveFathomAlias(request, ...rest) {
  const alias = /^@fathom\/([\w-]+)$/.exec(request);
  return resolve.call(this, alias ? path.join(root, 'libs', alias[1], 'src', 'index.ts') : request, ...rest);
};
