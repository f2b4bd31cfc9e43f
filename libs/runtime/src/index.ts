export * from './service.config';
export * from './fathom-app';
export * from './service.bootstrap';
export * from './embedded';
export * from './run-waiter';
