export * from './response.assessor';
export * from './adaptive-sample-rate';
export * from './planted-span.scorer';
export * from './sampled-embedding.drift';
export * from './share-episode.watch';
export * from './refusal.detector';
