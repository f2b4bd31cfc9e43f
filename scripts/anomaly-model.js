#!/usr/bin/env node
// Rebuilds libs/semantic/src/llm-monitor/anomaly-head.onnx, the LLM monitor's anomaly head:
// trains it on the generated corpus's train split (anomaly-corpus.ts, compiled to dist/ by
// `npm run build`) and exports it to ONNX. `npm run model:anomaly` runs both; training is
// deterministic, and a jest spec fails while the committed model differs from a rebuild.
'use strict';
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const lib = join(root, 'dist', 'libs', 'semantic', 'src', 'llm-monitor');
const { anomalyCorpus } = require(join(lib, 'anomaly-corpus.js'));
const { buildAnomalyModel } = require(join(lib, 'anomaly-head.js'));

const path = join('libs', 'semantic', 'src', 'llm-monitor', 'anomaly-head.onnx');
const bytes = buildAnomalyModel(anomalyCorpus('train'));
writeFileSync(join(root, path), bytes);
process.stdout.write(`wrote ${path} (${bytes.length} bytes)\n`);
