export * from './anomaly.rules';
export * from './anomaly-corpus';
export * from './anomaly-head';
export * from './fragment-features.util';
export * from './windowed-lru.cache';
export * from './llm.monitor';
