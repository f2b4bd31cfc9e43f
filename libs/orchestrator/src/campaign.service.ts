import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectBus, InvalidEventError, type Bus } from '@fathom/bus';
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
  CampaignValidationError,
  parseCampaign,
} from '@fathom/contracts';
import { DATABASE } from '@fathom/storage';
import {
  ADMISSION_POLICY,
  API_ACCESS,
  admitCampaign,
  type AdmissionAccess,
  type AdmissionPolicy,
} from './campaign-admission';

export interface StartedRun {
  campaignId: string;
  runId: string;
}

/** A run started, or the reason `refuse` gave for not starting it (nothing was created). */
export type Admission<R> = { started: StartedRun; refused?: undefined } | { started?: undefined; refused: R };

/** The reason `refuse` gave, as the admission transaction returns it (its candidate rolled back). */
class Refused<R> {
  constructor(readonly why: R) {}
}

/**
 * What handing out a run's plan came to: `published` by this call; `taken` when it is not owed
 * (another orchestrator published it or is publishing it now, or the run left pending); `owed`
 * when the bus refused it for now (it stays owed and the next pass retries it); `failed` when
 * the plan can never be published (the bus's schema rejects it) and the run was failed.
 */
export type PlanHandOut = 'published' | 'taken' | 'owed' | 'failed';

/**
 * Creates campaigns and their runs, and hands each run's shards to the load-generators.
 *
 * Plans go out through a transactional outbox: the run row commits first with its plan owed
 * (`planPublishedAt` null); the plan is then published inside a transaction that claims it
 * (`RunRepository.claimPlan`) and commits the mark only once the bus took it. An orchestrator
 * that dies between the two, or a bus that is down, leaves the plan owed, and the reconciler's
 * pass (on start and every FATHOM_RECONCILE_INTERVAL_MS) publishes it (`handOutOwedPlans`):
 * the run starts after the restart instead of waiting out its deadline, once however many
 * orchestrators share the database.
 */
@Injectable()
export class CampaignService {
  private readonly logger = new Logger(CampaignService.name);

  constructor(
    @InjectBus() private readonly bus: Bus,
    private readonly campaigns: CampaignRepository,
    private readonly runs: RunRepository,
    @Inject(DATABASE) private readonly database: Database,
    @Inject(ADMISSION_POLICY) private readonly policy: AdmissionPolicy,
  ) {}

  /**
   * Validates `input` and checks it against the admission policy (throws CampaignValidationError
   * naming each bad field), then starts a first run. `access.localFiles` only for the CLI.
   */
  async submit(
    input: unknown,
    trigger: RunTrigger,
    access: AdmissionAccess = API_ACCESS,
  ): Promise<StartedRun> {
    const admitted = await admitCampaign(parseCampaign(input), this.policy, access);
    if ('issues' in admitted) throw new CampaignValidationError('campaign', admitted.issues);
    const spec = admitted.spec;
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
    const run = (await this.createUnderLock(
      { campaignId, trigger, parentRunId, reason },
      async () => null,
    )) as StoredRun;
    await this.handOutPlan(run, spec);
    return { campaignId, runId: run.id };
  }

  /**
   * Starts a run of a stored campaign unless the campaign has a run open (pending or running):
   * then nothing is created and that run is returned as `refused`. Checked and created under the
   * campaign's run lock, so concurrent callers, in this process or another, start one run
   * between them. `hold`, when given, runs on that same transaction before it commits, with the
   * run started (`started`) or the open run found (`coalesced`): whatever it records about the
   * run (an alert joining it) is one step with the check, so an abort that counts the run's
   * holders under the same lock (`abort`'s `keep`) sees it, or ran before the check and the
   * check saw the run ended. null when there is no such campaign.
   */
  async startStoredUnlessOpen(
    campaignId: string,
    trigger: RunTrigger,
    reason: string | null,
    hold?: (tx: Queryable, run: StoredRun, how: 'started' | 'coalesced') => Promise<void>,
  ): Promise<Admission<StoredRun> | null> {
    const campaign = await this.campaigns.get(campaignId);
    if (!campaign) return null;
    return this.startUnless(
      { campaignId, trigger, parentRunId: null, reason },
      campaign.spec,
      async (tx, run) => {
        const open =
          (await createRepositories(tx).runs.list({ campaignId, status: ['pending', 'running'] })).find(
            (other) => other.id !== run.id,
          ) ?? null;
        if (open === null) await hold?.(tx, run, 'started');
        return open;
      },
      hold && ((tx, open) => hold(tx, open, 'coalesced')),
    );
  }

  /**
   * Creates the run in one transaction that holds the campaign's run lock (see
   * `RunRepository.lockCampaign`; every run this service creates takes it), then asks `refuse`,
   * on that transaction, whether the run may go: null commits it and its plan goes to the
   * load-generators (or stays owed: see the class); a reason rolls the run back (and whatever
   * `refuse` wrote), then `onRefused`, when given, runs with it on the same transaction, still
   * under the lock, and what it writes commits. So a check of the campaign's other runs, or a
   * claim of a stored decision, and the new run (or what the refusal records) are one step for
   * every orchestrator sharing the database.
   */
  async startUnless<R>(
    run: NewRun,
    spec: CampaignSpec,
    refuse: (tx: Queryable, run: StoredRun) => Promise<R | null>,
    onRefused?: (tx: Queryable, why: R) => Promise<void>,
  ): Promise<Admission<R>> {
    const created = await this.createUnderLock(run, refuse, onRefused);
    if (created instanceof Refused) return { refused: created.why };
    await this.handOutPlan(created, spec);
    return { started: { campaignId: created.campaignId, runId: created.id } };
  }

  private createUnderLock<R>(
    run: NewRun,
    refuse: (tx: Queryable, run: StoredRun) => Promise<R | null>,
    onRefused?: (tx: Queryable, why: R) => Promise<void>,
  ): Promise<StoredRun | Refused<R>> {
    return this.database.transaction(async (tx) => {
      const runs = createRepositories(tx).runs;
      await runs.lockCampaign(run.campaignId);
      // The candidate goes back to here on a refusal; the lock (taken before) stays held.
      await tx.query('SAVEPOINT candidate_run');
      const candidate = await runs.create(run);
      const why = await refuse(tx, candidate);
      if (why === null) return candidate;
      await tx.query('ROLLBACK TO SAVEPOINT candidate_run');
      await onRefused?.(tx, why);
      return new Refused(why);
    });
  }

  /**
   * Publishes the plans still owed (`RunRepository.listOwedPlans`), oldest first; stops at the
   * first the bus refuses, since the next would meet the same bus. Returns how many this call
   * published.
   */
  async handOutOwedPlans(): Promise<number> {
    let published = 0;
    for (const run of await this.runs.listOwedPlans()) {
      const campaign = await this.campaigns.get(run.campaignId);
      if (!campaign) continue;
      const outcome = await this.handOutPlan(run, campaign.spec);
      if (outcome === 'published') published++;
      if (outcome === 'owed') break;
    }
    return published;
  }

  /**
   * Publishes run `run`'s plan, one start-shard command per shard, unless it is not owed any
   * more. The claim and the publish are one transaction: committed once the bus took the
   * commands, rolled back (the plan stays owed) when it threw or the process died first.
   */
  async handOutPlan(run: StoredRun, spec: CampaignSpec): Promise<PlanHandOut> {
    const { campaignId, trigger } = run;
    const count = spec.load.shards;
    try {
      const claimed = await this.database.transaction(async (tx) => {
        if (!(await createRepositories(tx).runs.claimPlan(run.id))) return false;
        const commands: RunShardCommand[] = Array.from({ length: count }, (_, index) => ({
          ...envelope(campaignId, run.id),
          kind: 'start-shard',
          shard: { index, count },
          spec,
          trigger,
        }));
        await this.bus.publishMany(Topics.runShard, commands);
        return true;
      });
      if (!claimed) return 'taken';
    } catch (error) {
      const message = (error as Error).message;
      if (error instanceof InvalidEventError) {
        // No later try can succeed: fail the run with the reason rather than owe its plan forever.
        const reason = `could not hand the plan to the load-generators: ${message}`;
        await this.runs.transition(run.id, 'failed', { reason });
        this.logger.error(`run ${run.id} of campaign ${campaignId}: failed: ${reason}`);
        return 'failed';
      }
      this.logger.warn(
        `run ${run.id} of campaign ${campaignId}: plan not handed out (${message}); ` +
          'it stays pending and is retried on the next reconcile pass',
      );
      return 'owed';
    }
    this.logger.log(`run ${run.id} of campaign ${campaignId} (${trigger}): ${count} shard(s) published`);
    return 'published';
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
   *
   * Both happen on one transaction holding the campaign's run lock, with the run read again
   * there: `keep`, when given, is asked on that transaction whether the run must stay (true:
   * nothing is aborted), so its decision (no alert holds the run any more) and the abort are one
   * step against admissions to the campaign (`startStoredUnlessOpen`'s `hold`), in every
   * orchestrator sharing the database. False when the run was not aborted.
   */
  async abort(
    runId: string,
    reason: string,
    keep?: (tx: Queryable, run: StoredRun) => Promise<boolean>,
  ): Promise<boolean> {
    const found = await this.runs.get(runId);
    if (!found) return false;
    return this.database.transaction(async (tx) => {
      const runs = createRepositories(tx).runs;
      await runs.lockCampaign(found.campaignId);
      const run = await runs.get(runId);
      if (!run || (run.status !== 'pending' && run.status !== 'running')) return false;
      if (keep && (await keep(tx, run))) return false;
      await this.bus.publish(Topics.runControl, {
        ...envelope(run.campaignId, runId),
        kind: 'abort',
        reason,
      });
      return runs.transition(runId, 'aborted', { reason });
    });
  }
}
