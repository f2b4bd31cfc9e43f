import { CliExit } from '../cli-exit';
import { applyRunOverrides, parseDurationMs } from './run-overrides';

const campaign = () => ({
  name: 'c',
  target: { baseUrl: 'http://127.0.0.1:8000/v1', metricsUrls: [] },
  scenario: { type: 'chat', prompts: ['hi'] },
  load: { concurrency: 4, durationMs: 10_000 },
});

describe(parseDurationMs.name, () => {
  it.each([
    ['30s', 30_000],
    ['2m', 120_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['2500', 2500],
  ])('reads %s as %d ms', (text, ms) => expect(parseDurationMs(text)).toBe(ms));

  it.each(['', 's', '30 seconds', '-5s', '3x', '1s2'])('refuses %j', (text) =>
    expect(parseDurationMs(text)).toBeNull(),
  );
});

describe(applyRunOverrides.name, () => {
  it('returns the input itself when no flag is given', () => {
    const input = campaign();
    expect(applyRunOverrides(input, {})).toBe(input);
  });

  it('moves the metrics URLs served by the old target with --target, and only those', () => {
    const input = {
      ...campaign(),
      target: {
        baseUrl: 'http://127.0.0.1:8000/v1',
        metricsUrls: [
          'http://127.0.0.1:8000/metrics',
          'http://127.0.0.1:8000/dcgm/metrics?x=1',
          'http://gpu:9400/metrics',
        ],
      },
    };
    expect(applyRunOverrides(input, { target: 'https://10.0.0.1:9000/v1' })).toMatchObject({
      target: {
        baseUrl: 'https://10.0.0.1:9000/v1',
        metricsUrls: [
          'https://10.0.0.1:9000/metrics',
          'https://10.0.0.1:9000/dcgm/metrics?x=1',
          'http://gpu:9400/metrics',
        ],
      },
    });
    expect(input.target.metricsUrls[0]).toBe('http://127.0.0.1:8000/metrics');
    // A target that is not a URL leaves them for validation to name.
    expect(applyRunOverrides(input, { target: 'nope' })).toMatchObject({
      target: { metricsUrls: input.target.metricsUrls },
    });
  });

  it('replaces target, concurrency and duration without touching the input', () => {
    const input = campaign();
    const sut = applyRunOverrides(input, {
      target: 'http://10.0.0.1:9000/v1',
      concurrency: '32',
      duration: '30s',
    });
    expect(sut).toEqual({
      ...campaign(),
      target: { baseUrl: 'http://10.0.0.1:9000/v1', metricsUrls: [] },
      load: { concurrency: 32, durationMs: 30_000 },
    });
    expect(input).toEqual(campaign());
  });

  it('turns a closed profile into constant-rate, keeping its seed', () => {
    const input = {
      ...campaign(),
      load: { ...campaign().load, profile: { type: 'closed', seed: 7, thinkTimeMs: 5 } },
    };
    expect((applyRunOverrides(input, { rate: '20' }) as typeof input).load.profile).toEqual({
      type: 'constant-rate',
      ratePerSec: 20,
      seed: 7,
    });
    expect(
      (applyRunOverrides(campaign(), { rate: '2.5' }) as { load: { profile: unknown } }).load.profile,
    ).toEqual({
      type: 'constant-rate',
      ratePerSec: 2.5,
    });
  });

  it('sets the rate of a poisson profile', () => {
    const input = {
      ...campaign(),
      load: { ...campaign().load, profile: { type: 'poisson', ratePerSec: 5, seed: 3 } },
    };
    expect((applyRunOverrides(input, { rate: '40' }) as typeof input).load.profile).toEqual({
      type: 'poisson',
      ratePerSec: 40,
      seed: 3,
    });
  });

  it('creates the objects a sparse file lacks', () => {
    expect(applyRunOverrides({ name: 'x' }, { target: 'http://h/v1', concurrency: '2' })).toEqual({
      name: 'x',
      target: { baseUrl: 'http://h/v1' },
      load: { concurrency: 2 },
    });
  });

  it.each([
    [{ concurrency: '0' }, '--concurrency must be a positive integer'],
    [{ concurrency: '2.5' }, '--concurrency must be a positive integer'],
    [{ rate: 'fast' }, '--rate must be a positive number'],
    [{ duration: '10 minutes' }, '--duration must look like 30s'],
    [{ duration: '0s' }, '--duration must look like 30s'],
  ])('refuses %j with exit 2', (flags, message) => {
    const run = () => applyRunOverrides(campaign(), flags);
    expect(run).toThrow(CliExit);
    expect(run).toThrow(message);
  });

  it('refuses --rate for a profile without one rate', () => {
    const input = { ...campaign(), load: { ...campaign().load, profile: { type: 'sweep' } } };
    expect(() => applyRunOverrides(input, { rate: '5' })).toThrow('load.profile.type is sweep');
  });

  it('refuses flags on a file that is not an object', () => {
    expect(() => applyRunOverrides(['a'], { concurrency: '2' })).toThrow('not an object');
  });
});
