import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BUS, BusModule, InjectBus } from './bus.module';
import type { Bus } from '../bus';
import { InMemoryBus } from '../in-memory.transport';

@Injectable()
class RunPublisher {
  constructor(@InjectBus() readonly bus: Bus) {}
}

describe(BusModule.name, () => {
  async function boot(bus: Bus, ownsBus?: boolean) {
    @Module({ imports: [BusModule.forRoot(bus, { ownsBus })], providers: [RunPublisher] })
    class AppModule {}
    return NestFactory.createApplicationContext(AppModule, { logger: false });
  }

  it('injects the bus it was given', async () => {
    const bus = new InMemoryBus();
    const moduleRef = await boot(bus);
    expect(moduleRef.get(RunPublisher).bus).toBe(bus);
    expect(moduleRef.get(BUS)).toBe(bus);
    await moduleRef.close();
    await bus.close();
  });

  it('closes the bus on shutdown only when it owns it', async () => {
    const shared = new InMemoryBus();
    const owned = new InMemoryBus();
    await (await boot(shared)).close();
    await (await boot(owned, true)).close();
    await expect(shared.publishRaw('fathom.run.lifecycle.v1', '{}')).resolves.toBeUndefined();
    await expect(owned.publishRaw('fathom.run.lifecycle.v1', '{}')).rejects.toThrow(/closed/);
    await shared.close();
  });
});
