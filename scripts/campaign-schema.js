#!/usr/bin/env node
// Writes schema/campaign.schema.json and docs/campaign-reference.md from the zod campaign
// schemas (libs/contracts/src/campaign/campaign-schema.generator.ts, compiled to dist/ by
// `npm run build`). `npm run schema` runs both; a jest spec fails while the files are stale.
'use strict';
const { mkdirSync, writeFileSync } = require('node:fs');
const { dirname, join } = require('node:path');

const root = join(__dirname, '..');
const { campaignSchemaFiles } = require(
  join(root, 'dist', 'libs', 'contracts', 'src', 'campaign', 'campaign-schema.generator.js'),
);
for (const [path, text] of Object.entries(campaignSchemaFiles(root))) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
  process.stdout.write(`wrote ${path}\n`);
}
