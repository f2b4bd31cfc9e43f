import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { readFile } from 'node:fs/promises';
import { InjectBus, type Bus, type Subscription } from '@fathom/bus';
import { Topics, type ShadowRequest } from '@fathom/contracts';
import { cosineSimilarity } from '@fathom/semantic';
import { consumerGroup } from '@fathom/contracts';
import {
  ShadowCampaignInputSchema,
  ShadowLineSchema,
  type ShadowCampaignInput,
  type ShadowLine,
} from '@fathom/contracts';
import { compileRedactor, redactDeep } from './redaction.util';
import { callChatTarget, embedTexts } from './shadow-target.client';
import type { ShadowSample } from '@fathom/contracts';
import { compareShadowSamples } from './shadow-diff.util';
import { FieldValidationError, fieldIssues, type FieldIssue } from '../http/field-validation';
import { ShadowRepository, type StoredShadowCampaign } from '@fathom/storage';

export class ShadowInputError extends FieldValidationError {
  constructor(issues: FieldIssue[]) {
    super('shadow campaign', issues);
  }
}

/**
 * Runs shadow campaigns: each production request is redacted first (nothing unredacted is
 * stored or sent), replayed against primary, secondary and candidate at once, and stored with
 * the three observations; the report compares the candidate with the noise floor.
 */
@Injectable()
export class ShadowService implements OnApplicationShutdown {
  private sendSeq = 0;
  private readonly logger = new Logger(ShadowService.name);
  private readonly running = new Map<string, Promise<void>>();
  private readonly subscriptions = new Set<Subscription>();
  private closed = false;

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly shadows: ShadowRepository,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    await Promise.allSettled(this.running.values());
  }

  /** Validates and starts a campaign in the background; throws ShadowInputError naming bad fields. */
  async start(input: unknown): Promise<StoredShadowCampaign> {
    const parsed = ShadowCampaignInputSchema.safeParse(input);
    if (!parsed.success) {
      throw new ShadowInputError(fieldIssues(parsed.error));
    }
    const config = parsed.data;
    const lines = config.source.type === 'jsonl' ? await readJsonl(config.source.path) : null;
    const campaign = await this.shadows.create(config);
    const done = this.execute(campaign.id, config, lines).finally(() => this.running.delete(campaign.id));
    this.running.set(campaign.id, done);
    return campaign;
  }

  private async execute(
    id: string,
    config: ShadowCampaignInput,
    jsonlLines: ShadowLine[] | null,
  ): Promise<void> {
    try {
      const redact = compileRedactor(config.redaction);
      const replay = (line: ShadowLine) => this.replay(id, config, redactDeep(line, redact));
      if (config.source.type === 'topic') {
        await this.fromTopic(id, config.source, replay);
      } else {
        const lines = config.source.type === 'inline' ? config.source.requests : (jsonlLines ?? []);
        await pool(lines, config.concurrency, replay);
      }
      const samples = (await this.shadows.samples(id)).map((s) => s.sample);
      await this.shadows.finish(
        id,
        'completed',
        {
          samples: samples.length,
          similarity: config.embeddings ? 'compared' : 'not configured',
          groups: compareShadowSamples(samples),
        },
        null,
      );
    } catch (error) {
      this.logger.error(`shadow campaign ${id} failed: ${(error as Error).message}`);
      await this.shadows.finish(id, 'failed', null, (error as Error).message);
    }
  }

  private async fromTopic(
    id: string,
    source: { maxRequests: number; durationMs: number },
    replay: (line: ShadowLine) => Promise<void>,
  ): Promise<void> {
    let accepted = 0;
    const inFlight = new Set<Promise<void>>();
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    // Own group per campaign: every shadow campaign sees every production request.
    const subscription = await this.bus.subscribe(
      Topics.shadowRequest,
      { group: consumerGroup('orchestrator', Topics.shadowRequest, id) },
      async (request: ShadowRequest) => {
        if (accepted >= source.maxRequests || this.closed) return;
        accepted++;
        const line = ShadowLineSchema.parse({
          body: request.body,
          intent: request.intent,
          endpoint: request.endpoint,
        });
        const p = replay(line).finally(() => inFlight.delete(p));
        inFlight.add(p);
        if (accepted >= source.maxRequests) finish();
      },
    );
    this.subscriptions.add(subscription);
    const timer = setTimeout(finish, source.durationMs);
    await finished;
    clearTimeout(timer);
    await subscription.close();
    this.subscriptions.delete(subscription);
    await Promise.allSettled(inFlight);
  }

  /** `line` is already redacted. */
  private async replay(id: string, config: ShadowCampaignInput, line: ShadowLine): Promise<void> {
    const body = { ...line.body, model: config.model, max_tokens: config.maxTokens };
    // The send order rotates per request: whichever target is sent first gets a head start, and
    // a fixed order (candidate always last) showed up as a candidate latency "difference".
    const targets = [config.primary, config.secondary, config.candidate];
    const first = this.sendSeq++ % targets.length;
    const observed: Array<Awaited<ReturnType<typeof callChatTarget>>> = [];
    await Promise.all(
      targets.map(async (_, k) => {
        const i = (first + k) % targets.length;
        observed[i] = await callChatTarget(targets[i], body, config.requestTimeoutMs);
      }),
    );
    const [primary, secondary, candidate] = observed;
    let simPS: number | null = null;
    let simPC: number | null = null;
    if (config.embeddings && primary.ok && secondary.ok && candidate.ok) {
      const [p, s, c] = await embedTexts(
        config.embeddings,
        [primary.content, secondary.content, candidate.content],
        config.requestTimeoutMs,
      );
      simPS = cosineSimilarity(p, s);
      simPC = cosineSimilarity(p, c);
    }
    const observation = ({ ok, e2eMs, ttftMs, hallucinationRisk }: typeof primary) => ({
      ok,
      e2eMs,
      ttftMs,
      hallucinationRisk,
    });
    const sample: ShadowSample = {
      endpoint: line.endpoint,
      intent: line.intent ?? 'unlabelled',
      primary: observation(primary),
      secondary: observation(secondary),
      candidate: observation(candidate),
      similarityPrimarySecondary: simPS,
      similarityPrimaryCandidate: simPC,
    };
    await this.shadows.addSample(id, line, sample);
  }
}

async function readJsonl(path: string): Promise<ShadowLine[]> {
  const text = await readFile(path, 'utf8').catch((error: Error) => {
    throw new ShadowInputError([{ field: 'source.path', message: error.message }]);
  });
  return text
    .split('\n')
    .map((raw, index) => ({ raw: raw.trim(), line: index + 1 }))
    .filter(({ raw }) => raw.length > 0)
    .map(({ raw, line }) => {
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch {
        throw new ShadowInputError([{ field: 'source.path', message: `line ${line}: not JSON` }]);
      }
      const parsed = ShadowLineSchema.safeParse(value);
      if (!parsed.success) {
        throw new ShadowInputError([
          {
            field: 'source.path',
            message: `line ${line}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
          },
        ]);
      }
      return parsed.data;
    });
}

async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
