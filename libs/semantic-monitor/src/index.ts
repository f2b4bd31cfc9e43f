export * from './semantic-monitor.module';
export * from './semantic-monitor.service';
export * from './semantic-monitor.settings';
