import { parseLoadGeneratorSettings } from './load-generator.settings';

describe(parseLoadGeneratorSettings.name, () => {
  it('runs the engine in a worker unless told otherwise', () => {
    expect(parseLoadGeneratorSettings({}).FATHOM_ENGINE_THREAD).toBe('worker');
    expect(parseLoadGeneratorSettings({ FATHOM_ENGINE_THREAD: '' }).FATHOM_ENGINE_THREAD).toBe('worker');
  });

  it('keeps the in-process engine on FATHOM_ENGINE_THREAD=inline', () => {
    expect(parseLoadGeneratorSettings({ FATHOM_ENGINE_THREAD: 'inline' }).FATHOM_ENGINE_THREAD).toBe(
      'inline',
    );
  });

  it('refuses anything else, naming the variable', () => {
    expect(() => parseLoadGeneratorSettings({ FATHOM_ENGINE_THREAD: 'thread' })).toThrow(
      /invalid load-generator settings: FATHOM_ENGINE_THREAD/,
    );
  });

  it('names the generator host:pid unless FATHOM_GENERATOR_ID says otherwise', () => {
    expect(parseLoadGeneratorSettings({}).FATHOM_GENERATOR_ID).toMatch(new RegExp(`:${process.pid}$`));
    expect(parseLoadGeneratorSettings({ FATHOM_GENERATOR_ID: 'gen-7' }).FATHOM_GENERATOR_ID).toBe('gen-7');
  });
});
