export * from './embedder';
export * from './embedding-drift.util';
