export * from './semantic-goodput.util';
export * from './goodput.ledger';
