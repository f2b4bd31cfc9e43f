// `node -r ./bench/ts-register.js bench/x.bench.ts`: the workspace's one TypeScript bootstrap.
'use strict';
require('../libs/testing/src/ts-register');
