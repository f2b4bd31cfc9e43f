import {
  Logger,
  Module,
  type DynamicModule,
  type INestApplication,
  type LogLevel,
  type Type,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Registry } from 'prom-client';
import { BusModule, type Bus } from '@fathom/bus';
import type { Database } from '@fathom/storage';
import {
  ObservabilityModule,
  createMetricsRegistry,
  installProcessGuard,
  tracingEdgeSampling,
} from '@fathom/observability';
import { StorageModule } from '@fathom/storage';
import {
  BodyDepthInterceptor,
  FieldValidationFilter,
  OrchestratorModule,
  parseOrchestratorSettings,
} from '@fathom/orchestrator';
import { LoadGeneratorModule, parseLoadGeneratorSettings } from '@fathom/load-generator';
import { SemanticMonitorModule, parseSemanticMonitorSettings } from '@fathom/semantic-monitor';
import { GpuCollectorModule, parseGpuCollectorSettings } from '@fathom/gpu-collector';
import { AnalyzerModule, parseAnalyzerSettings } from '@fathom/analyzer';
import type { ServiceName } from '@fathom/contracts';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Each service's module with its settings, validated from `env` here, once, whatever the
 * deployment (one service per process or all five embedded): a bad value stops the start.
 */
const FEATURE_MODULES: Record<ServiceName, (env: Env) => DynamicModule> = {
  orchestrator: (env) => OrchestratorModule.register(parseOrchestratorSettings(env)),
  'load-generator': (env) => LoadGeneratorModule.register(parseLoadGeneratorSettings(env)),
  'semantic-monitor': (env) => SemanticMonitorModule.register(parseSemanticMonitorSettings(env)),
  'gpu-collector': (env) => GpuCollectorModule.register(parseGpuCollectorSettings(env)),
  analyzer: (env) => AnalyzerModule.register(parseAnalyzerSettings(env)),
};

/** Services that read or write the database; the others run without one. */
const NEEDS_DATABASE: readonly ServiceName[] = ['orchestrator', 'analyzer'];

export interface FathomAppOptions {
  readonly services: readonly ServiceName[];
  readonly bus: Bus;
  /** Required when the services include the orchestrator or the analyzer. */
  readonly database?: Database;
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  readonly logLevels?: LogLevel[] | false;
  readonly registry?: Registry;
  /** Where the services' settings are read from (default: this process's environment). */
  readonly env?: Env;
  /**
   * Close on SIGINT/SIGTERM (Nest's shutdown hooks, the default). False when the host handles
   * the signal itself (`fathom run` aborts its run on Ctrl-C and closes the app afterwards).
   */
  readonly shutdownHooks?: boolean;
}

export interface FathomApp {
  readonly app: INestApplication;
  readonly url: string;
  close(): Promise<void>;
}

@Module({})
class FathomRootModule {
  static with(options: FathomAppOptions, registry: Registry): DynamicModule {
    const imports: Array<Type | DynamicModule> = [
      ObservabilityModule.forRoot({ services: [...options.services], registry }),
      BusModule.forRoot(options.bus),
    ];
    if (options.services.some((s) => NEEDS_DATABASE.includes(s)) && !options.database)
      throw new Error(`services ${options.services.join(', ')} need a database`);
    // Others use one when given (the semantic-monitor's baseline runs).
    if (options.database) imports.push(StorageModule.forRoot(options.database));
    const env = options.env ?? process.env;
    for (const service of options.services) imports.push(FEATURE_MODULES[service](env));
    return { module: FathomRootModule, imports };
  }
}

/**
 * One Nest application hosting any subset of the five services: all five in one process on
 * the in-memory bus (the embedded default), or one per process over Kafka. The bus and the
 * database are created by the caller and closed by it.
 */
export async function createFathomApp(options: FathomAppOptions): Promise<FathomApp> {
  const registry =
    options.registry ?? createMetricsRegistry(options.services.length > 1 ? 'fathom' : options.services[0]);
  // What a target or a scraped endpoint sends must never end the process hosting the runs.
  installProcessGuard(new Logger('ProcessGuard'), registry);
  // Spans this process exported whole and reduced by edge sampling (when tracing exports).
  tracingEdgeSampling()?.countInto(registry);
  const app = await NestFactory.create(FathomRootModule.with(options, registry), {
    logger: options.logLevels ?? ['error', 'warn', 'log'],
    abortOnError: false,
  });
  app.useGlobalFilters(new FieldValidationFilter());
  app.useGlobalInterceptors(new BodyDepthInterceptor());
  if (options.shutdownHooks !== false) app.enableShutdownHooks();
  const host = options.host ?? '127.0.0.1';
  await app.listen(options.port ?? 0, host);
  const address = app.getHttpServer().address() as { port: number };
  const url = `http://${host}:${address.port}`;
  new Logger('Fathom').log(`${options.services.join(', ')} listening on ${url}`);
  let closed = false;
  return {
    app,
    url,
    close: async () => {
      if (closed) return;
      closed = true;
      await app.close();
    },
  };
}
