export * from './agent-oscillation.detector';
