export * from './load-generator.module';
export * from './load-generator.settings';
