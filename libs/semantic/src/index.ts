export * from './stream';
export * from './confidence';
export * from './prompt';
export * from './schema';
export * from './agent';
export * from './goodput';
export * from './embedding';
