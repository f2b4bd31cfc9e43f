export * from './tracing';
export * from './metrics';
export * from './health';
export * from './nest/observability.module';
export * from './process-guard';
export * from './genai/genai-client.telemetry';
export * from './edge-sampling';
