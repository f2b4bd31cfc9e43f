import { timingSafeEqual } from 'node:crypto';

/**
 * Whether an `Authorization` header is `Bearer <secret>`. The comparison takes the same time
 * wherever the presented token first differs (`timingSafeEqual`); only its length shows.
 */
export function bearerTokenMatches(authorization: string | undefined, secret: string): boolean {
  const header = authorization ?? '';
  const presented = Buffer.from(header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '');
  const expected = Buffer.from(secret);
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
