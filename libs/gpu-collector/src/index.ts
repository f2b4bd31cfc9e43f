export * from './gpu-collector.module';
export * from './gpu-collector.settings';
