import { Injectable, Logger } from '@nestjs/common';
import { RunRepository } from '@fathom/storage';
import { AlertRepository, type StoredAlertRule } from './alert.repository';
import { labelsMatch, type AlertmanagerPayload } from './alertmanager-payload';
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
 * schedule, rerun) is never aborted by an alert.
 */
@Injectable()
export class AlertService {
  private readonly logger = new Logger(AlertService.name);

  constructor(
    private readonly alerts: AlertRepository,
    private readonly campaigns: CampaignService,
    private readonly runs: RunRepository,
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
    try {
      const admitted = await this.campaigns.startStoredUnlessOpen(rule.campaignId, 'alert', reason);
      if (!admitted) {
        this.logger.warn(`rule ${rule.name}: campaign ${rule.campaignId} does not exist`);
        await this.alerts.releaseClaim(key);
        return null;
      }
      if (admitted.refused) {
        const open = admitted.refused;
        await this.alerts.linkRun(key, open.id, { coalesced: true });
        this.logger.log(`${reason}: coalesced into open run ${open.id} (${open.trigger})`);
        return { coalesced: { runId: open.id, campaignId: open.campaignId } };
      }
      // A resolved notification may have overtaken this one while the run was being created.
      if ((await this.alerts.linkRun(key, admitted.started.runId)) === 'resolved') {
        await this.release(admitted.started.runId, name);
      }
      return { started: admitted.started };
    } catch (error) {
      await this.alerts.releaseClaim(key);
      throw error;
    }
  }

  /** Aborts an alert-started run once no alert holding it is firing; true when it aborted it. */
  private async release(runId: string, name: string): Promise<boolean> {
    const run = await this.runs.get(runId);
    if (run?.trigger !== 'alert') return false;
    if ((await this.alerts.firingHolders(runId)) > 0) return false;
    return this.campaigns.abort(runId, `alert ${name} resolved`);
  }
}

function alertName(labels: Record<string, string>): string {
  return labels.alertname ?? '(unnamed)';
}
