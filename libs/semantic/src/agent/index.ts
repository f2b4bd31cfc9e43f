export * from './agent-oscillation.detector';
export * from './agent-workflow.judge';
