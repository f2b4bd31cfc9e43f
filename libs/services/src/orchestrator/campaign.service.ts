import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectBus, type Bus } from '@fathom/bus';
import {
  CampaignRepository,
  RunRepository,
  createRepositories,
  type Database,
  type NewRun,
  type Queryable,
  type StoredRun,
} from '@fathom/storage';
import {
  Topics,
  envelope,
  type CampaignSpec,
  type RunShardCommand,
  type RunTrigger,
} from '@fathom/contracts';
import { DATABASE } from '../storage/storage.module';
import { parseCampaign } from './campaign-input';

export interface StartedRun {
  campaignId: string;
  runId: string;
}

/** A run started, or the reason `refuse` gave for not starting it (nothing was created). */
export type Admission<R> = { started: StartedRun; refused?: undefined } | { started?: undefined; refused: R };

/** Thrown inside the admission transaction to roll the new run back. */
class Refused<R> {
  constructor(readonly why: R) {}
}

/** Creates campaigns and their runs, and hands each run's shards to the load-generators. */
@Injectable()
export class CampaignService {
  private readonly logger = new Logger(CampaignService.name);

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly campaigns: CampaignRepository,
    private readonly runs: RunRepository,
    @Inject(DATABASE) private readonly database: Database,
  ) {}

  /** Validates `input` (throws CampaignValidationError naming each bad field) and starts a first run. */
  async submit(input: unknown, trigger: RunTrigger): Promise<StartedRun> {
    const spec = parseCampaign(input);
    const campaign = await this.campaigns.create({ name: spec.name, spec });
    return this.startRun(campaign.id, spec, trigger, null);
  }

  async startRun(
    campaignId: string,
    spec: CampaignSpec,
    trigger: RunTrigger,
    parentRunId: string | null,
    reason: string | null = null,
  ): Promise<StartedRun> {
    const run = await this.createUnderLock({ campaignId, trigger, parentRunId, reason }, async () => null);
    return this.publishPlan(run as StoredRun, spec);
  }

  /**
   * Starts a run of a stored campaign unless the campaign has a run open (pending or running):
   * then nothing is created and that run is returned as `refused`. Checked and created under the
   * campaign's run lock, so concurrent callers, in this process or another, start one run
   * between them. null when there is no such campaign.
   */
  async startStoredUnlessOpen(
    campaignId: string,
    trigger: RunTrigger,
    reason: string | null,
  ): Promise<Admission<StoredRun> | null> {
    const campaign = await this.campaigns.get(campaignId);
    if (!campaign) return null;
    return this.startUnless(
      { campaignId, trigger, parentRunId: null, reason },
      campaign.spec,
      async (tx, run) =>
        (await createRepositories(tx).runs.list({ campaignId, status: ['pending', 'running'] })).find(
          (open) => open.id !== run.id,
        ) ?? null,
    );
  }

  /**
   * Creates the run in one transaction that holds the campaign's run lock (see
   * `RunRepository.lockCampaign`; every run this service creates takes it), then asks `refuse`,
   * on that transaction, whether the run may go: a reason rolls the run back and is returned;
   * null commits it and its plan goes to the load-generators. So a check of the campaign's other
   * runs, or a claim of a stored decision, and the new run are one step for every orchestrator
   * sharing the database.
   */
  async startUnless<R>(
    run: NewRun,
    spec: CampaignSpec,
    refuse: (tx: Queryable, run: StoredRun) => Promise<R | null>,
  ): Promise<Admission<R>> {
    const created = await this.createUnderLock(run, refuse);
    if (created instanceof Refused) return { refused: created.why };
    return { started: await this.publishPlan(created, spec) };
  }

  private async createUnderLock<R>(
    run: NewRun,
    refuse: (tx: Queryable, run: StoredRun) => Promise<R | null>,
  ): Promise<StoredRun | Refused<R>> {
    try {
      return await this.database.transaction(async (tx) => {
        const runs = createRepositories(tx).runs;
        await runs.lockCampaign(run.campaignId);
        const candidate = await runs.create(run);
        const why = await refuse(tx, candidate);
        if (why !== null) throw new Refused(why);
        return candidate;
      });
    } catch (error) {
      if (error instanceof Refused) return error as Refused<R>;
      throw error;
    }
  }

  private async publishPlan(run: StoredRun, spec: CampaignSpec): Promise<StartedRun> {
    const { campaignId, trigger } = run;
    const count = spec.load.shards;
    const commands: RunShardCommand[] = Array.from({ length: count }, (_, index) => ({
      ...envelope(campaignId, run.id),
      kind: 'start-shard',
      shard: { index, count },
      spec,
      trigger,
    }));
    try {
      await this.bus.publishMany(Topics.runShard, commands);
    } catch (error) {
      const reason = `could not hand the plan to the load-generators: ${(error as Error).message}`;
      await this.runs.transition(run.id, 'failed', { reason });
      throw error;
    }
    this.logger.log(`run ${run.id} of campaign ${campaignId} (${trigger}): ${count} shard(s) published`);
    return { campaignId, runId: run.id };
  }

  /** Starts a run of a stored campaign (schedules, alerts); null when there is no such campaign. */
  async startStored(
    campaignId: string,
    trigger: RunTrigger,
    reason: string | null,
  ): Promise<StartedRun | null> {
    const campaign = await this.campaigns.get(campaignId);
    if (!campaign) return null;
    return this.startRun(campaignId, campaign.spec, trigger, null, reason);
  }

  /**
   * Stops a run's load: every load-generator gets the abort (broadcast) and stops starting
   * requests and cancels those in flight (see `runShard`'s signal). The abort is published
   * before the state is stored, so the load stops as soon as the bus delivers it.
   */
  async abort(runId: string, reason: string): Promise<boolean> {
    const run = await this.runs.get(runId);
    if (!run || (run.status !== 'pending' && run.status !== 'running')) return false;
    await this.bus.publish(Topics.runControl, {
      ...envelope(run.campaignId, runId),
      kind: 'abort',
      reason,
    });
    return this.runs.transition(runId, 'aborted', { reason });
  }
}
