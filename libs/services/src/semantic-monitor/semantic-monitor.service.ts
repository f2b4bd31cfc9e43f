import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectBus, type Bus, type Subscription } from '@fathom/bus';
import { Topics, envelope, type RequestTelemetry, type SemanticSignal } from '@fathom/contracts';
import { consumerGroup } from '../runtime/service-name';
import { tokenStats } from './token-stats.util';

/** Reads request telemetry and publishes the token-level view of every response. */
@Injectable()
export class SemanticMonitorService implements OnModuleInit, OnApplicationShutdown {
  private subscription: Subscription | null = null;

  constructor(@InjectBus() private readonly bus: Bus) {}

  async onModuleInit(): Promise<void> {
    this.subscription = await this.bus.subscribe(
      Topics.requestTelemetry,
      { group: consumerGroup('semantic-monitor', Topics.requestTelemetry) },
      (batch) => this.onBatch(batch),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.subscription?.close();
  }

  private async onBatch(batch: RequestTelemetry): Promise<void> {
    const signals: SemanticSignal[] = batch.records.map((record) => ({
      // Derived ids keep a redelivered batch idempotent downstream.
      ...envelope(batch.campaignId, batch.runId),
      id: `${batch.id}/${record.requestId}`,
      kind: 'token-stats',
      requestId: record.requestId,
      ...tokenStats(record),
    }));
    await this.bus.publishMany(Topics.semanticSignal, signals);
  }
}
