import {
  Controller,
  Get,
  Global,
  Header,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  Res,
} from '@nestjs/common';
import type { Registry } from 'prom-client';
import { runHealthChecks, type HealthCheck, type HealthReport } from '../health';

/** The little of express's response these controllers use (no @types/express needed). */
interface HttpResponse {
  status(code: number): unknown;
  setHeader(name: string, value: string): unknown;
  send(body: string): unknown;
}

export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');
export const SERVICE_NAMES = Symbol('SERVICE_NAMES');

/** Collects the health checks that feature modules register at init. */
@Injectable()
export class HealthRegistry {
  private readonly checks: HealthCheck[] = [];
  register(check: HealthCheck): void {
    this.checks.push(check);
  }
  list(): readonly HealthCheck[] {
    return this.checks;
  }
}

@Controller()
class HealthController {
  constructor(
    private readonly registry: HealthRegistry,
    @Inject(SERVICE_NAMES) private readonly services: string[],
  ) {}

  @Get('health')
  async health(@Res({ passthrough: true }) res: HttpResponse): Promise<HealthReport> {
    const report = await runHealthChecks(this.services, this.registry.list());
    if (report.status !== 'ok') res.status(503);
    return report;
  }
}

@Controller()
class MetricsController {
  constructor(@Inject(METRICS_REGISTRY) private readonly registry: Registry) {}

  @Get('metrics')
  @Header('Cache-Control', 'no-store')
  async metrics(@Res() res: HttpResponse): Promise<void> {
    res.setHeader('Content-Type', this.registry.contentType);
    res.send(await this.registry.metrics());
  }
}

/** `/health` and `/metrics` for a process hosting one or more Fathom services. */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(options: { services: string[]; registry: Registry }): DynamicModule {
    return {
      module: ObservabilityModule,
      controllers: [HealthController, MetricsController],
      providers: [
        HealthRegistry,
        { provide: METRICS_REGISTRY, useValue: options.registry },
        { provide: SERVICE_NAMES, useValue: options.services },
      ],
      exports: [HealthRegistry, METRICS_REGISTRY],
    };
  }
}
