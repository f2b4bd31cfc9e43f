// Packs what bench/device/check.sh needs on a GPU host that has no npm registry and no Node.js:
// .devrun/node.xz (this Node binary), .devrun/nm (the node_modules packages the checks load,
// found by tracing them here) with @swc/core replaced by a shim that serves every workspace .ts
// file precompiled here (the real one is a 50 MB native binary). Ignored by git; about 30 MB.
//   node bench/device/pack.js
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const out = path.join(root, '.devrun');
const nm = path.join(out, 'nm');
const trace = path.join(out, 'trace.txt');
fs.rmSync(nm, { recursive: true, force: true });
fs.mkdirSync(nm, { recursive: true });
fs.writeFileSync(trace, '');

// 1. Trace the packages each check loads, in every process it starts.
const env = { ...process.env, NODE_OPTIONS: `-r ${path.join(__dirname, 'trace-requires.js')}`, FATHOM_TRACE_FILE: trace };
const reg = ['-r', './bench/ts-register.js'];
const runs = [
  [...reg, 'bench/load-engine/timing-accuracy.ts', '20', '0.3', '1'],
  [...reg, 'bench/device/live-nvidia-smi.ts', '1'],
  [...reg, 'apps/cli/src/main.ts', 'gpu', 'parse', 'libs/gpu/src/__fixtures__/nvidia-smi/h100-query-gpu-full-load.csv'],
  ['bench/load-engine/ab.js', '.', '1', '0.3', '8', 'json'],
];
for (const args of runs) execFileSync(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'ignore', 'inherit'] });

// Only the files loaded, with each package's package.json (for resolution): whole packages are 130 MB.
const packages = new Set();
const files = new Set(fs.readFileSync(trace, 'utf8').split('\n').filter(Boolean));
for (const file of files) {
  const rel = file.slice(file.lastIndexOf('/node_modules/') + '/node_modules/'.length);
  const parts = rel.split('/');
  const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  if (name.startsWith('@swc/')) continue;
  packages.add(file.slice(0, file.lastIndexOf('/node_modules/') + '/node_modules/'.length) + name);
  const target = path.join(nm, path.relative(path.join(root, 'node_modules'), file));
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.copyFileSync(file, target);
  // Nested package.json files ("type": "commonjs" under dist/cjs) decide how a .js file loads.
  for (let dir = path.dirname(file); dir.length > root.length + '/node_modules'.length; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest)) fs.copyFileSync(manifest, path.join(nm, path.relative(path.join(root, 'node_modules'), manifest)));
  }
}
for (const dir of packages) {
  const target = path.join(nm, path.relative(path.join(root, 'node_modules'), dir), 'package.json');
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.copyFileSync(path.join(dir, 'package.json'), target);
}

// 2. The @swc/core shim: the workspace's TypeScript, compiled here with the options ts-register uses.
const swc = require(path.join(root, 'node_modules/@swc/core'));
const swcrc = JSON.parse(fs.readFileSync(path.join(root, '.swcrc'), 'utf8'));
delete swcrc.$schema;
swcrc.jsc.baseUrl = root;
const compiled = {};
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full);
    else if (entry.name.endsWith('.ts') && !/\.(int-)?spec\.ts$/.test(entry.name)) {
      const { code } = swc.transformSync(fs.readFileSync(full, 'utf8'), { ...swcrc, filename: full, swcrc: false, sourceMaps: false });
      compiled[path.relative(root, full)] = code;
    }
  }
};
for (const dir of ['apps', 'libs', 'bench']) walk(path.join(root, dir));
const shim = path.join(nm, '@swc', 'core');
fs.mkdirSync(shim, { recursive: true });
fs.writeFileSync(path.join(shim, 'compiled.json'), JSON.stringify(compiled));
fs.writeFileSync(path.join(shim, 'package.json'), JSON.stringify({ name: '@swc/core', main: 'index.js' }));
fs.writeFileSync(
  path.join(shim, 'index.js'),
  `'use strict';
// Stand-in for @swc/core written by bench/device/pack.js: serves the workspace's .ts files as
// compiled on the packing machine. A file that changed since, or was not packed, fails loudly.
const path = require('node:path');
const root = path.join(__dirname, '..', '..', '..', '..');
const compiled = require('./compiled.json');
exports.transformSync = (_source, options) => {
  const rel = path.relative(root, options.filename);
  const code = compiled[rel];
  if (code === undefined) throw new Error(\`\${rel} was not precompiled: run node bench/device/pack.js again\`);
  return { code };
};
`,
);

// 3. This Node binary, compressed (the GPU host's image has no Node.js).
const nodeXz = path.join(out, 'node.xz');
if (!fs.existsSync(nodeXz)) execFileSync('sh', ['-c', `xz -T2 -6 -c "${process.execPath}" > "${nodeXz}"`]);
console.log(`${packages.size} packages, ${Object.keys(compiled).length} precompiled files`);
console.log(execFileSync('du', ['-sh', nm, nodeXz], { encoding: 'utf8' }));
