import { retryAfterHeaderSeconds, retryAfterOfHeaders } from './request-outcome';

describe('Retry-After (RFC 9110 10.2.3)', () => {
  const now = Date.parse('2026-12-02T01:00:00Z');

  it('reads delta-seconds, and an HTTP-date as the wait from now (never negative)', () => {
    expect(retryAfterHeaderSeconds('120', now)).toBe(120);
    expect(retryAfterHeaderSeconds(' 1.5 ', now)).toBe(1.5);
    expect(retryAfterHeaderSeconds('Wed, 02 Dec 2026 01:00:30 GMT', now)).toBe(30);
    expect(retryAfterHeaderSeconds('Wed, 02 Dec 2026 00:59:00 GMT', now)).toBe(0);
  });

  it('gives nothing for an absent or unreadable value', () => {
    expect(retryAfterHeaderSeconds(undefined, now)).toBeUndefined();
    expect(retryAfterHeaderSeconds('soon', now)).toBeUndefined();
    expect(retryAfterHeaderSeconds('-3', now)).toBeUndefined();
    expect(retryAfterHeaderSeconds('2026', now)).toBe(2026);
  });

  it('takes the first of repeated headers from undici', () => {
    expect(retryAfterOfHeaders({ 'retry-after': ['4', '9'] })).toEqual({ retryAfterS: 4 });
    expect(retryAfterOfHeaders({})).toEqual({});
  });
});
