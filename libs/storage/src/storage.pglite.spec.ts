import { openDatabase } from './database/open-database';
import { describeStorageContract } from './storage.contract-suite';

describeStorageContract('PGlite in memory', () => openDatabase({ kind: 'pglite', dataDir: null }));
