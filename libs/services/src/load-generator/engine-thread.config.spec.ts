import { engineThreadFromEnv } from './engine-thread.config';

describe(engineThreadFromEnv.name, () => {
  it('runs the engine in a worker unless told otherwise', () => {
    expect(engineThreadFromEnv({})).toBe('worker');
    expect(engineThreadFromEnv({ FATHOM_ENGINE_THREAD: '' })).toBe('worker');
  });

  it('keeps the in-process engine on FATHOM_ENGINE_THREAD=inline', () => {
    expect(engineThreadFromEnv({ FATHOM_ENGINE_THREAD: 'inline' })).toBe('inline');
    expect(engineThreadFromEnv({ FATHOM_ENGINE_THREAD: 'worker' })).toBe('worker');
  });

  it('refuses anything else, naming the variable', () => {
    expect(() => engineThreadFromEnv({ FATHOM_ENGINE_THREAD: 'thread' })).toThrow(
      /FATHOM_ENGINE_THREAD must be "worker" or "inline", got "thread"/,
    );
  });
});
