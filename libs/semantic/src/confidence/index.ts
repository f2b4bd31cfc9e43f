export * from './token-entropy.util';
export * from './hallucination-risk.detector';
export * from './token-sample.budget';
