import { createBus } from '@fathom/bus';
import { openDatabase, RunRepository, snapshotDirFromEnv, type Database } from '@fathom/storage';
import type { Bus } from '@fathom/bus';
import type { LogLevel } from '@nestjs/common';
import { CampaignService } from '@fathom/orchestrator';
import {
  LoadGeneratorSettingsSchema,
  ShardRunnerService,
  startEngineThreadEarly,
} from '@fathom/load-generator';
import { SemanticMonitorService } from '@fathom/semantic-monitor';
import { createFathomApp, type FathomApp } from './fathom-app';
import { SERVICE_NAMES } from '@fathom/contracts';

export interface EmbeddedOptions {
  /** PGlite data directory; null keeps everything in memory (or in `scratchDir`). */
  readonly dataDir: string | null;
  /**
   * With `dataDir` null: a new, empty directory for the throw-away database's files instead of
   * memory (`fathom run` of a long campaign). The caller removes it after `close`.
   */
  readonly scratchDir?: string | null;
  readonly host?: string;
  readonly port?: number;
  readonly logLevels?: LogLevel[] | false;
  /** See `FathomAppOptions.shutdownHooks`. */
  readonly shutdownHooks?: boolean;
}

export interface EmbeddedFathom {
  readonly url: string;
  readonly fathom: FathomApp;
  readonly bus: Bus;
  readonly database: Database;
  readonly campaigns: CampaignService;
  readonly runs: RunRepository;
  /**
   * Loads now what the first run would otherwise load while it measures (the load engine's worker,
   * the embedding model, the LLM monitor's anomaly model) and resolves when all are ready.
   */
  warm(): Promise<void>;
  close(): Promise<void>;
}

/** All five services in this process, on the in-memory bus and embedded PostgreSQL (PGlite). */
export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedFathom> {
  // The load engine's thread loads its code on another core while the store and services start
  // (an invalid setting is left for the app's own settings check to name).
  const engineThread = LoadGeneratorSettingsSchema.shape.FATHOM_ENGINE_THREAD.safeParse(
    process.env.FATHOM_ENGINE_THREAD,
  );
  if (engineThread.success && engineThread.data === 'worker') startEngineThreadEarly();
  const bus = await createBus({ kind: 'memory' });
  // An in-memory store starts from the cached snapshot of an empty, migrated one (FATHOM_CACHE_DIR).
  const database = await openDatabase({
    kind: 'pglite',
    dataDir: options.dataDir,
    snapshotDir: snapshotDirFromEnv(process.env),
    scratchDir: options.scratchDir ?? null,
  });
  try {
    const fathom = await createFathomApp({
      services: SERVICE_NAMES,
      bus,
      database,
      host: options.host,
      port: options.port,
      logLevels: options.logLevels,
      shutdownHooks: options.shutdownHooks,
    });
    return {
      url: fathom.url,
      fathom,
      bus,
      database,
      campaigns: fathom.app.get(CampaignService),
      runs: fathom.app.get(RunRepository),
      warm: async () => {
        await Promise.all([
          fathom.app.get(ShardRunnerService).warm(),
          fathom.app.get(SemanticMonitorService).warmModels(),
        ]);
      },
      close: async () => {
        await fathom.close();
        await bus.close();
        await database.close();
      },
    };
  } catch (error) {
    await bus.close();
    await database.close();
    throw error;
  }
}
