export * from './schema-drift.util';
export * from './tool-contract.tracker';
export * from './observed-shape.util';
export * from './declared-contract.util';
