export * from './token-entropy.util';
export * from './hallucination-risk.detector';
