export * from './orchestrator.module';
export * from './campaign.service';
export * from './campaign-input';
export { FieldValidationError, FieldValidationFilter, parseFields } from './http/field-validation';
export * from './orchestrator.settings';
export * from './shadow/gateway/shadow-gateway';
