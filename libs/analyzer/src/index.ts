export * from './analyzer.module';
export * from './analyzer.settings';
