export * from './orchestrator.module';
export * from './campaign.service';
export { FieldValidationFilter } from './http/field-validation';
export { BodyDepthInterceptor } from './http/body-depth.interceptor';
export * from './orchestrator.settings';
export * from './shadow/gateway/shadow-gateway';
export * from './shadow/gateway/shadow-gateway-admin';
export * from './run-progress.service';
