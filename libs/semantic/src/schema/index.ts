export * from './schema-drift.util';
export * from './tool-contract.tracker';
