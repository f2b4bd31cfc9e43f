export * from './stream';
export * from './confidence';
