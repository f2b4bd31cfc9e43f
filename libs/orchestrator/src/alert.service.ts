import { Injectable, Logger } from '@nestjs/common';
import { AlertRepository, type StoredAlertRule } from '@fathom/storage';
import { labelsMatch, type AlertmanagerPayload } from '@fathom/contracts';
import { CampaignService, type StartedRun } from './campaign.service';

export interface AlertOutcome {
  alerts: number;
  /** Runs this notification started: one per (firing episode, matching rule), first copy only. */
  started: Array<{ runId: string; campaignId: string; ruleId: string; fingerprint: string }>;
  /**
   * Firing alerts whose campaign already had a run open: joined to that run (recorded on the
   * trigger), no second run started.
   */
  coalesced: Array<{ runId: string; campaignId: string; ruleId: string; fingerprint: string }>;
  /** Firing alerts whose episode had already started a run (repeats, concurrent copies). */
  duplicates: number;
  /** Runs ended because the alert that started them resolved. */
  aborted: string[];
  /** Alerts no rule matched. */
  unmatched: number;
}

/**
 * Alert-driven runs: a firing alert starts the campaign of every rule its labels match, once per
 * firing episode (group key + fingerprint + startsAt).
 *
 * Policy: one open run per campaign. Alerts come in storms (one incident fires several alerts,
 * several rules may map to one campaign) and two overlapping runs of one campaign would load the
 * target twice and measure each other. So a firing alert whose campaign already has a run pending
 * or running, whatever started it, starts nothing: it is coalesced into that run (the trigger
 * records the run and `coalesced`) and listed as such in the answer. The check and the new run
 * are one step under the campaign's database lock (`CampaignService.startStoredUnlessOpen`), so
 * concurrent notifications, in one orchestrator or several, start one run between them.
 * A resolved alert aborts a run only when an alert started it and no alert holding it (the one
 * that started it, or one coalesced into it) is still firing; a run started otherwise (API,
 * schedule, rerun) is never aborted by an alert. The link of an alert to the run it started or
 * joined is written in the same locked step as the check, and the count of a run's firing
 * holders and its abort are one step under the same lock, so an alert that fires while the
 * last holder resolves either holds the run before the count (the run stays) or finds it
 * aborted (and starts a new one): it never joins a run that is ending.
 */
@Injectable()
export class AlertService {
  private readonly logger = new Logger(AlertService.name);

  constructor(
    private readonly alerts: AlertRepository,
    private readonly campaigns: CampaignService,
  ) {}

  async handle(payload: AlertmanagerPayload): Promise<AlertOutcome> {
    const rules = await this.alerts.listRules();
    const outcome: AlertOutcome = {
      alerts: payload.alerts.length,
      started: [],
      coalesced: [],
      duplicates: 0,
      aborted: [],
      unmatched: 0,
    };
    for (const alert of payload.alerts) {
      if (alert.status === 'resolved') {
        for (const runId of await this.alerts.resolve(payload.groupKey, alert.fingerprint)) {
          if (await this.release(runId, alertName(alert.labels))) outcome.aborted.push(runId);
        }
        continue;
      }
      const matching = rules.filter((rule) => labelsMatch(rule.matchLabels, alert.labels));
      if (matching.length === 0) outcome.unmatched++;
      for (const rule of matching) {
        const key = {
          groupKey: payload.groupKey,
          fingerprint: alert.fingerprint,
          startsAt: alert.startsAt,
          ruleId: rule.id,
        };
        if (!(await this.alerts.claimFiring(key))) {
          outcome.duplicates++;
          continue;
        }
        const admitted = await this.start(rule, key, alertName(alert.labels));
        const entry = { ruleId: rule.id, fingerprint: alert.fingerprint };
        if (admitted?.started) outcome.started.push({ ...admitted.started, ...entry });
        else if (admitted?.coalesced) outcome.coalesced.push({ ...admitted.coalesced, ...entry });
      }
    }
    return outcome;
  }

  private async start(
    rule: StoredAlertRule,
    key: { groupKey: string; fingerprint: string; startsAt: string; ruleId: string },
    name: string,
  ): Promise<{ started?: StartedRun; coalesced?: StartedRun } | null> {
    const reason = `alert ${name} firing (fingerprint ${key.fingerprint}, rule ${rule.name})`;
    // The claim's status when it was linked: a resolved notification may have overtaken this one.
    const claim: { status: 'firing' | 'resolved' } = { status: 'firing' };
    try {
      // The link to the run started or joined is written under the campaign's run lock, with the
      // open-run check: a release (which counts holders under that lock) sees it, or ended the
      // run before the check, which then starts a new one instead of joining an ended run.
      const admitted = await this.campaigns.startStoredUnlessOpen(
        rule.campaignId,
        'alert',
        reason,
        async (tx, run, how) => {
          claim.status = await new AlertRepository(tx).linkRun(key, run.id, {
            coalesced: how === 'coalesced',
          });
        },
      );
      if (!admitted) {
        this.logger.warn(`rule ${rule.name}: campaign ${rule.campaignId} does not exist`);
        await this.alerts.releaseClaim(key);
        return null;
      }
      if (admitted.refused) {
        const open = admitted.refused;
        // A claim resolved before it joined needs no release: it never counted as a holder, and
        // the release of whoever resolves last counts the holders under the lock.
        this.logger.log(`${reason}: coalesced into open run ${open.id} (${open.trigger})`);
        return { coalesced: { runId: open.id, campaignId: open.campaignId } };
      }
      if (claim.status === 'resolved') await this.release(admitted.started.runId, name);
      return { started: admitted.started };
    } catch (error) {
      await this.alerts.releaseClaim(key);
      throw error;
    }
  }

  /**
   * Aborts an alert-started run once no alert holding it is firing; true when it aborted it.
   * The count and the abort are one step under the campaign's run lock (see `start`).
   */
  private release(runId: string, name: string): Promise<boolean> {
    return this.campaigns.abort(
      runId,
      `alert ${name} resolved`,
      async (tx, run) => run.trigger !== 'alert' || (await new AlertRepository(tx).firingHolders(runId)) > 0,
    );
  }
}

function alertName(labels: Record<string, string>): string {
  return labels.alertname ?? '(unnamed)';
}
