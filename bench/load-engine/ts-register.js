// Lets plain `node` run the workspace's TypeScript (and @fathom/* aliases) for the load-engine bench.
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const Module = require('node:module');
const root = path.join(__dirname, '..', '..');
const swc = require(path.join(root, 'node_modules/@swc/core'));
const cfg = JSON.parse(fs.readFileSync(path.join(root, '.swcrc'), 'utf8'));
delete cfg.$schema;
cfg.jsc.baseUrl = root;
require.extensions['.ts'] = (m, f) => m._compile(swc.transformSync(fs.readFileSync(f, 'utf8'), { ...cfg, filename: f, swcrc: false }).code, f);
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const alias = /^@fathom\/([\w-]+)$/.exec(request);
  return resolve.call(this, alias ? path.join(root, 'libs', alias[1], 'src', 'index.ts') : request, ...rest);
};
