import { Global, Inject, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import {
  BaselineRepository,
  CampaignRepository,
  RunEventRepository,
  RunReportRepository,
  RunRepository,
  type Database,
} from '@fathom/storage';
import { HealthRegistry } from '@fathom/observability';

export const DATABASE = Symbol('DATABASE');

/** Repositories over the process's one database (PGlite embedded, or PostgreSQL). */
@Global()
@Module({})
export class StorageModule implements OnModuleInit {
  constructor(
    @Inject(DATABASE) private readonly database: Database,
    private readonly health: HealthRegistry,
  ) {}

  static forRoot(database: Database): DynamicModule {
    return {
      module: StorageModule,
      providers: [
        { provide: DATABASE, useValue: database },
        { provide: CampaignRepository, useFactory: () => new CampaignRepository(database) },
        { provide: RunRepository, useFactory: () => new RunRepository(database) },
        { provide: RunEventRepository, useFactory: () => new RunEventRepository(database) },
        { provide: RunReportRepository, useFactory: () => new RunReportRepository(database) },
        { provide: BaselineRepository, useFactory: () => new BaselineRepository(database) },
      ],
      exports: [
        DATABASE,
        CampaignRepository,
        RunRepository,
        RunEventRepository,
        RunReportRepository,
        BaselineRepository,
      ],
    };
  }

  onModuleInit(): void {
    this.health.register({
      name: `database(${this.database.kind})`,
      check: async () => {
        await this.database.query('select 1');
        return { ok: true };
      },
    });
  }
}
