/**
 * The partition of a key: 32-bit FNV-1a of its UTF-8 bytes modulo the partition count. Stable
 * across processes, so one key always lands on one partition (and stays in order there).
 */
export function partitionForKey(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(key, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}
