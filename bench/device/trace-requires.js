// Preloaded with NODE_OPTIONS=-r by pack.js: on exit, appends every file this process loaded
// from node_modules to $FATHOM_TRACE_FILE (one path a line).
'use strict';
const { appendFileSync } = require('node:fs');
process.on('exit', () => {
  const files = Object.keys(require.cache).filter((f) => f.includes('/node_modules/'));
  if (files.length) appendFileSync(process.env.FATHOM_TRACE_FILE, `${files.join('\n')}\n`);
});
