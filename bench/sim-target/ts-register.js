// Minimal require hook so the bench runs TypeScript straight from source: @swc/core (already a
// dependency) transpiles each .ts file with the workspace .swcrc, whose `paths` map the
// @fathom/* aliases. (@swc-node/register is not installed in this workspace.)
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const swc = require('@swc/core');

const root = join(__dirname, '..', '..');
const swcrc = JSON.parse(readFileSync(join(root, '.swcrc'), 'utf8'));
delete swcrc.$schema;
swcrc.jsc.baseUrl = root;

require.extensions['.ts'] = function compile(module, filename) {
  const { code } = swc.transformSync(readFileSync(filename, 'utf8'), { ...swcrc, filename, swcrc: false, sourceMaps: 'inline' });
  module._compile(code, filename);
};
