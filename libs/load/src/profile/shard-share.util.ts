/** Shard i of n gets floor or ceil of total/n so that the parts add up to the total exactly. */
export function shareOf(total: number, shard: { index: number; count: number }): number {
  const base = Math.floor(total / shard.count);
  return base + (shard.index < total % shard.count ? 1 : 0);
}
