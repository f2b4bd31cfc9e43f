import { Global, Inject, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import type { Database } from '../database/database';
import { AlertRepository } from '../repositories/alert.repository';
import { BaselineRepository } from '../repositories/baseline.repository';
import { CampaignRepository } from '../repositories/campaign.repository';
import { RerunRepository } from '../repositories/rerun.repository';
import { RunEventRepository } from '../repositories/run-event.repository';
import { RunReportRepository } from '../repositories/run-report.repository';
import { RunRepository } from '../repositories/run.repository';
import { ScheduleRepository } from '../repositories/schedule.repository';
import { ShadowBreakerRepository } from '../repositories/shadow-breaker.repository';
import { ShadowRepository } from '../repositories/shadow.repository';

/** Every repository over the one database; each is built as `new X(database)`. */
const REPOSITORIES = [
  CampaignRepository,
  RunRepository,
  RunEventRepository,
  RunReportRepository,
  BaselineRepository,
  AlertRepository,
  ScheduleRepository,
  RerunRepository,
  ShadowRepository,
  ShadowBreakerRepository,
] as const;
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
        ...REPOSITORIES.map((repository) => ({
          provide: repository,
          useFactory: () => new repository(database),
        })),
      ],
      exports: [DATABASE, ...REPOSITORIES],
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
