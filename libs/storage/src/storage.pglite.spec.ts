import { openDatabase } from './database/open-database';
import { describeStorageContract } from './storage.contract';

describeStorageContract('PGlite in memory', () => openDatabase({ kind: 'pglite', dataDir: null }));
