import { Global, Inject, Module, type DynamicModule, type OnModuleDestroy } from '@nestjs/common';
import type { Bus } from '../bus';

/** Injection token of the application's `Bus`. */
export const BUS = Symbol('fathom.bus');

/** Parameter decorator: `constructor(@InjectBus() private readonly bus: Bus)`. */
export const InjectBus = (): ParameterDecorator => Inject(BUS);

export interface BusModuleOptions {
  /** Close the bus when the Nest application shuts down. Set when the module is its only user. */
  readonly ownsBus?: boolean;
}

class BusLifecycle implements OnModuleDestroy {
  constructor(
    private readonly bus: Bus,
    private readonly ownsBus: boolean,
  ) {}

  async onModuleDestroy(): Promise<void> {
    if (this.ownsBus) await this.bus.close();
  }
}

/**
 * Thin Nest adapter: the bus is built outside Nest (createBus) and handed in, so one bus can be
 * shared by several services running in one process.
 */
@Global()
@Module({})
export class BusModule {
  static forRoot(bus: Bus, options: BusModuleOptions = {}): DynamicModule {
    return {
      module: BusModule,
      global: true,
      providers: [
        { provide: BUS, useValue: bus },
        { provide: BusLifecycle, useFactory: () => new BusLifecycle(bus, options.ownsBus ?? false) },
      ],
      exports: [BUS],
    };
  }
}
