export * from './prompt-depth.util';
export * from './prompt-explosion.detector';
