import { mkdir } from 'node:fs/promises';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { Database, Queryable, Row } from './database';
import { errorCode } from './error-code.util';

/**
 * PostgreSQL's buffer pool inside PGlite's WASM memory, which never shrinks: at PostgreSQL's
 * 128 MB default, a long run's process grew as the pool filled. 16 MB measured 133 MB less RSS
 * at start and 150 MB less after 20,000 stored events, with inserts no slower (this VM).
 */
const PGLITE_SHARED_BUFFERS = '16MB';
/** How often the embedded database checkpoints (see `PgliteDatabase.checkpoint`). */
const CHECKPOINT_EVERY_MS = 30_000;

/**
 * Embedded PostgreSQL (WASM) in this process: one connection, so statements run one at a time.
 * Starting takes about 2 s; open it once and share it. Writes are far cheaper in batches (a
 * multi-row insert) than row by row.
 */
export class PgliteDatabase implements Database {
  readonly kind = 'pglite' as const;

  private readonly checkpoints: NodeJS.Timeout;

  private constructor(
    private readonly pglite: PGlite,
    /** `null` when the database lives in memory. */
    readonly dataDir: string | null,
    checkpointEveryMs: number,
  ) {
    this.checkpoints = setInterval(() => void this.checkpoint(), checkpointEveryMs);
    this.checkpoints.unref();
  }

  /**
   * Writes dirty buffers and recycles the WAL. PGlite runs PostgreSQL single-user, with no
   * checkpointer process and no checkpoint on `max_wal_size`, so without this its WAL (in memory
   * for `memory://`, on disk otherwise) grew for as long as the process wrote: 112 MB after
   * 80,000 stored events, 32 MB with a checkpoint every 10,000. A failed checkpoint is retried
   * at the next tick; the data stays correct either way (the WAL is only longer).
   */
  async checkpoint(): Promise<boolean> {
    if (this.pglite.closed) return false;
    try {
      await this.pglite.exec('CHECKPOINT');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Bytes of WASM memory PGlite holds: PostgreSQL's buffer pool, caches and the in-memory files
   * of its runtime. It never shrinks, so a process whose RSS creeps can be told apart from one
   * whose database grew (bench/memory.bench.ts prints it).
   */
  wasmHeapBytes(): number {
    return (
      (this.pglite.Module as { wasmMemory?: { buffer: ArrayBuffer } }).wasmMemory?.buffer.byteLength ?? 0
    );
  }

  /**
   * The whole database as a gzipped tarball, which `open(null, { loadDataDir })` starts from
   * without PostgreSQL's initdb (see `pglite-snapshot.ts`).
   */
  async dump(): Promise<Blob> {
    await this.checkpoint();
    return this.pglite.dumpDataDir('gzip');
  }

  static async open(
    dataDir: string | null,
    options: { checkpointEveryMs?: number; loadDataDir?: Blob } = {},
  ): Promise<PgliteDatabase> {
    if (dataDir !== null) await mkdir(dataDir, { recursive: true });
    try {
      const pglite = await PGlite.create(dataDir ?? undefined, {
        ...(options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir }),
        startParams: [
          ...PGlite.defaultStartParams,
          ...['-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`],
          // What a checkpoint keeps of the WAL for reuse (PostgreSQL's default: 80 MB).
          ...['-c', 'min_wal_size=32MB', '-c', 'max_wal_size=32MB'],
        ],
      });
      return new PgliteDatabase(pglite, dataDir, options.checkpointEveryMs ?? CHECKPOINT_EVERY_MS);
    } catch (error) {
      // PGlite loads its WASM runtime with dynamic import(); Jest's module sandbox only allows
      // that when Node runs with --experimental-vm-modules.
      if (errorCode(error) === 'ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING_FLAG') {
        throw new Error(
          'PGlite cannot start inside Jest without dynamic import(): run Jest with NODE_OPTIONS=--experimental-vm-modules',
          { cause: error },
        );
      }
      throw error;
    }
  }

  async query<T = Row>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    const result = await this.pglite.query<T>(sql, [...params]);
    return result.rows;
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.pglite.transaction((tx: Transaction) =>
      fn({
        query: async <R = Row>(sql: string, params: readonly unknown[] = []) =>
          (await tx.query<R>(sql, [...params])).rows,
      }),
    );
  }

  async close(): Promise<void> {
    clearInterval(this.checkpoints);
    if (!this.pglite.closed) await this.pglite.close();
  }
}
