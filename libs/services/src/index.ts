export * from './runtime/service-name';
export * from './runtime/service.config';
export * from './runtime/fathom-app';
export * from './orchestrator/campaign-input';
export * from './orchestrator/campaign.service';
export * from './runtime/service.bootstrap';
export * from './runtime/embedded';
export * from './runtime/run-waiter';
