export * from './sse.decoder';
export * from './stream-parse.error';
export * from './chat-stream.assembler';
export * from './completion-body.template';
export * from './parse-chat-stream';
