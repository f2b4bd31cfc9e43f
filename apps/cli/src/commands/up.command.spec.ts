import { CliExit } from '../cli-exit';
import { isLoopbackHost, requireTokenOffLoopback } from './up.command';

describe('fathom up --host', () => {
  it('tells loopback addresses from the others', () => {
    expect(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'].every(isLoopbackHost)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'fathom.example'].some(isLoopbackHost)).toBe(false);
  });

  it('refuses to serve on another address without FATHOM_API_TOKEN, with exit code 2', () => {
    let thrown: unknown;
    try {
      requireTokenOffLoopback('0.0.0.0', {});
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CliExit);
    expect((thrown as CliExit).code).toBe(2);
    expect((thrown as CliExit).message).toContain('FATHOM_API_TOKEN');
    expect(() =>
      requireTokenOffLoopback('0.0.0.0', { FATHOM_API_TOKEN: 'a-token-of-some-length' }),
    ).not.toThrow();
    expect(() => requireTokenOffLoopback('127.0.0.1', {})).not.toThrow();
  });
});
