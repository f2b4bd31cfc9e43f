import { Injectable, Logger } from '@nestjs/common';
import { AlertRepository, type StoredAlertRule } from './alert.repository';
import { labelsMatch, type AlertmanagerPayload } from './alertmanager-payload';
import { CampaignService } from './campaign.service';

export interface AlertOutcome {
  alerts: number;
  /** Runs this notification started: one per (firing episode, matching rule), first copy only. */
  started: Array<{ runId: string; campaignId: string; ruleId: string; fingerprint: string }>;
  /** Firing alerts whose episode had already started a run (repeats, concurrent copies). */
  duplicates: number;
  /** Runs ended because the alert that started them resolved. */
  aborted: string[];
  /** Alerts no rule matched. */
  unmatched: number;
}

/**
 * Alert-driven runs: a firing alert starts the campaign of every rule its labels match, once per
 * firing episode (group key + fingerprint + startsAt); the resolved alert aborts what it started.
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
      duplicates: 0,
      aborted: [],
      unmatched: 0,
    };
    for (const alert of payload.alerts) {
      if (alert.status === 'resolved') {
        for (const runId of await this.alerts.resolve(payload.groupKey, alert.fingerprint)) {
          if (await this.campaigns.abort(runId, `alert ${alertName(alert.labels)} resolved`))
            outcome.aborted.push(runId);
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
        const started = await this.start(rule, key, alertName(alert.labels));
        if (started) outcome.started.push({ ...started, ruleId: rule.id, fingerprint: alert.fingerprint });
      }
    }
    return outcome;
  }

  private async start(
    rule: StoredAlertRule,
    key: { groupKey: string; fingerprint: string; startsAt: string; ruleId: string },
    name: string,
  ): Promise<{ runId: string; campaignId: string } | null> {
    const reason = `alert ${name} firing (fingerprint ${key.fingerprint}, rule ${rule.name})`;
    try {
      const started = await this.campaigns.startStored(rule.campaignId, 'alert', reason);
      if (!started) {
        this.logger.warn(`rule ${rule.name}: campaign ${rule.campaignId} does not exist`);
        await this.alerts.releaseClaim(key);
        return null;
      }
      // A resolved notification may have overtaken this one while the run was being created.
      if ((await this.alerts.linkRun(key, started.runId)) === 'resolved') {
        await this.campaigns.abort(started.runId, `alert ${name} resolved`);
      }
      return started;
    } catch (error) {
      await this.alerts.releaseClaim(key);
      throw error;
    }
  }
}

function alertName(labels: Record<string, string>): string {
  return labels.alertname ?? '(unnamed)';
}
