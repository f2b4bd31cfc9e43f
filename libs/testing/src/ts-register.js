// The one TypeScript bootstrap for running the workspace from source (jest's worker threads, the
// benches, `node -r`): @swc/core (already a dependency) transpiles each .ts file on require with
// the workspace .swcrc (decorator metadata kept, @fathom/* paths rewritten); bare `@fathom/<lib>`
// requests from .js files resolve to libs/<lib>/src/index.ts. A worker thread started from source
// runs `require(<this file>); require(<entry.ts>)` as its eval'd code; built (dist/), the
// entry is compiled .js and nothing here runs.
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const Module = require('node:module');

const root = path.join(__dirname, '..', '..', '..');
const swc = require(path.join(root, 'node_modules/@swc/core'));
const swcrc = JSON.parse(fs.readFileSync(path.join(root, '.swcrc'), 'utf8'));
delete swcrc.$schema;
swcrc.jsc.baseUrl = root;

require.extensions['.ts'] = (module, filename) =>
  module._compile(
    swc.transformSync(fs.readFileSync(filename, 'utf8'), {
      ...swcrc,
      filename,
      swcrc: false,
      sourceMaps: 'inline',
    }).code,
    filename,
  );

const resolve = Module._resolveFilename;
Module._resolveFilename = function resolveFathomAlias(request, ...rest) {
  const alias = /^@fathom\/([\w-]+)$/.exec(request);
  return resolve.call(this, alias ? path.join(root, 'libs', alias[1], 'src', 'index.ts') : request, ...rest);
};
