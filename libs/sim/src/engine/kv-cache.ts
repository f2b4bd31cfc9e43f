import { mix32 } from '../text/prng.util';

/**
 * Paged KV cache with a prefix cache, after vLLM's block manager.
 *
 * Contract: capacity is counted in blocks of `blockSize` tokens. A block is *used* while a
 * running sequence references it; a full prompt block whose last user finished stays cached
 * but *evictable* (LRU) until space is needed. Usage = used / capacity, as vLLM reports it
 * (evictable blocks count as free).
 *
 * Prefix-cache key of block i = mix(key of block i-1, ids of block i): a block hits only when
 * the whole prefix up to it is identical.
 */
export class KvCache {
  private used = 0;
  /** hash -> reference count, for cached (full, hashed) blocks. */
  private readonly refs = new Map<number, number>();
  /** Evictable cached blocks, oldest first (Map keeps insertion order). */
  private readonly evictable = new Map<number, true>();
  queriedTokens = 0;
  hitTokens = 0;

  constructor(
    readonly blockSize: number,
    private capacity: number,
    readonly prefixCaching: boolean,
  ) {}

  get capacityBlocks(): number {
    return this.capacity;
  }

  /** Changes the usable capacity (the kv_shrink fault); callers preempt until `usedBlocks <= capacity`. */
  setCapacity(blocks: number): void {
    this.capacity = Math.max(1, blocks);
    this.evictUntilFits(0);
  }

  get usedBlocks(): number {
    return this.used;
  }

  get freeBlocks(): number {
    return this.capacity - this.used;
  }

  get usage(): number {
    return Math.min(1, this.used / this.capacity);
  }

  blockHashes(ids: ArrayLike<number>): number[] {
    const hashes: number[] = [];
    const full = Math.floor(ids.length / this.blockSize);
    let h = 0x9747b28c;
    for (let b = 0; b < full; b++) {
      for (let i = b * this.blockSize; i < (b + 1) * this.blockSize; i++) h = mix32(h, ids[i]);
      hashes.push(h);
    }
    return hashes;
  }

  /**
   * Reserves blocks for `totalTokens` tokens whose full-block hashes are `hashes`. Returns the
   * number of prompt tokens served from the prefix cache, or null (nothing held) if it does not fit.
   * At least one token is always computed (as vLLM does), so a full hit gives up its last block.
   */
  allocate(
    hashes: number[],
    totalTokens: number,
    countQuery: boolean,
  ): { cachedTokens: number; held: number[]; privateBlocks: number } | null {
    let hits = 0;
    if (this.prefixCaching) {
      while (hits < hashes.length && this.refs.has(hashes[hits])) hits++;
      if (hits * this.blockSize >= totalTokens) hits = Math.max(0, hits - 1);
    }
    const needed = Math.ceil(totalTokens / this.blockSize);
    // Hit blocks that are evictable become used again; they need no new space.
    let revived = 0;
    for (let i = 0; i < hits; i++) if (this.refs.get(hashes[i]) === 0) revived++;
    const fresh = needed - hits;
    if (this.used + revived + fresh > this.capacity) return null;
    for (let i = 0; i < hits; i++) {
      const r = this.refs.get(hashes[i]) ?? 0;
      if (r === 0) this.evictable.delete(hashes[i]);
      this.refs.set(hashes[i], r + 1);
    }
    this.used += revived + fresh;
    this.evictUntilFits(0);
    const held = hashes.slice(0, hits);
    let privateBlocks = fresh;
    if (this.prefixCaching) {
      // Newly computed full prompt blocks join the cache (registered at allocation: a sequence
      // admitted in the same step may share them, as with vLLM's block hashing).
      for (let i = hits; i < hashes.length && i < needed; i++) {
        const r = this.refs.get(hashes[i]);
        if (r === undefined) {
          this.refs.set(hashes[i], 1);
          held.push(hashes[i]);
          privateBlocks--;
        }
      }
    }
    if (countQuery) {
      this.queriedTokens += totalTokens;
      this.hitTokens += hits * this.blockSize;
    }
    return { cachedTokens: hits * this.blockSize, held, privateBlocks };
  }

  /** One more private block (a decode step crossed a block boundary); false when full. */
  grow(): boolean {
    if (this.used + 1 > this.capacity) return false;
    this.used++;
    this.evictUntilFits(0);
    return true;
  }

  release(held: number[], privateBlocks: number): void {
    this.used -= privateBlocks;
    for (const h of held) {
      const r = (this.refs.get(h) ?? 1) - 1;
      this.refs.set(h, r);
      if (r === 0) {
        this.used--;
        this.evictable.set(h, true);
      }
    }
    this.evictUntilFits(0);
  }

  private evictUntilFits(extra: number): void {
    for (const h of this.evictable.keys()) {
      if (this.used + this.evictable.size + extra <= this.capacity) break;
      this.evictable.delete(h);
      this.refs.delete(h);
    }
  }
}
