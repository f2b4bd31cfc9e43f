export * from './semantic-goodput.util';
