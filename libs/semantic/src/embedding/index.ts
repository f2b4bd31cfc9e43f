export * from './embedder';
export * from './embedding-drift.util';
export * from './use-lite.embedder';
export * from './response-baseline';
export * from './embedding-worker.protocol';
export * from './worker.embedder';
