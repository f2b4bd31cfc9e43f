import { randomUUID } from 'node:crypto';
import type { Queryable, Row } from '../database/database';
import type { AlertRuleInput } from '@fathom/contracts';

export interface StoredAlertRule extends AlertRuleInput {
  id: string;
  createdAt: number;
}

/**
 * Alert label rules and the firing alerts they turned into runs (tables of migration 2). Built
 * over a transaction's `tx` (`new AlertRepository(tx)`), its statements take part in that
 * transaction: how a link or a count of holders shares the campaign's run lock.
 */
export class AlertRepository {
  constructor(private readonly db: Queryable) {}

  async createRule(rule: AlertRuleInput): Promise<StoredAlertRule> {
    const [row] = await this.db.query(
      `INSERT INTO alert_rules (id, name, matchers, campaign_id) VALUES ($1, $2, $3::jsonb, $4)
       RETURNING id, name, matchers, campaign_id, created_at`,
      [randomUUID(), rule.name, JSON.stringify(rule.matchLabels), rule.campaignId],
    );
    return toRule(row);
  }

  async listRules(): Promise<StoredAlertRule[]> {
    const rows = await this.db.query(
      'SELECT id, name, matchers, campaign_id, created_at FROM alert_rules ORDER BY created_at, id',
    );
    return rows.map(toRule);
  }

  async deleteRule(id: string): Promise<boolean> {
    // Triggers keep their history; a rule that already fired is only unlinked from new alerts.
    const used = await this.db.query('SELECT 1 FROM alert_triggers WHERE rule_id = $1 LIMIT 1', [id]);
    if (used.length > 0) return false;
    return (await this.db.query('DELETE FROM alert_rules WHERE id = $1 RETURNING id', [id])).length > 0;
  }

  /**
   * Claims one firing episode of an alert for a rule: true for the first caller only (the
   * primary key is group key + fingerprint + startsAt + rule), so copies of a notification,
   * however many and however concurrent, claim it once.
   */
  async claimFiring(key: {
    groupKey: string;
    fingerprint: string;
    startsAt: string;
    ruleId: string;
  }): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO alert_triggers (group_key, fingerprint, starts_at, rule_id, status)
       VALUES ($1, $2, $3, $4, 'firing')
       ON CONFLICT DO NOTHING RETURNING rule_id`,
      [key.groupKey, key.fingerprint, key.startsAt, key.ruleId],
    );
    return rows.length > 0;
  }

  /** Gives a claim up (its run could not start), so that the next notification tries again. */
  async releaseClaim(key: {
    groupKey: string;
    fingerprint: string;
    startsAt: string;
    ruleId: string;
  }): Promise<void> {
    await this.db.query(
      'DELETE FROM alert_triggers WHERE group_key = $1 AND fingerprint = $2 AND starts_at = $3 AND rule_id = $4',
      [key.groupKey, key.fingerprint, key.startsAt, key.ruleId],
    );
  }

  /**
   * Links a claim to its run: the run it started, or (`coalesced`) the open run of the campaign it
   * joined. Returns the claim's status now (it may have been resolved meanwhile).
   */
  async linkRun(
    key: { groupKey: string; fingerprint: string; startsAt: string; ruleId: string },
    runId: string,
    options: { coalesced?: boolean } = {},
  ): Promise<'firing' | 'resolved'> {
    const [row] = await this.db.query<{ status: 'firing' | 'resolved' }>(
      `UPDATE alert_triggers SET run_id = $5, coalesced = $6
        WHERE group_key = $1 AND fingerprint = $2 AND starts_at = $3 AND rule_id = $4 RETURNING status`,
      [key.groupKey, key.fingerprint, key.startsAt, key.ruleId, runId, options.coalesced ?? false],
    );
    return row?.status ?? 'resolved';
  }

  /** Firing alerts (started or coalesced) that hold run `runId`. */
  async firingHolders(runId: string): Promise<number> {
    const [row] = await this.db.query<{ count: number }>(
      `SELECT count(*)::integer AS count FROM alert_triggers WHERE run_id = $1 AND status = 'firing'`,
      [runId],
    );
    return Number(row.count);
  }

  /** Marks every firing episode of this alert in this group resolved; returns the runs they started. */
  async resolve(groupKey: string, fingerprint: string): Promise<string[]> {
    const rows = await this.db.query<{ run_id: string | null }>(
      `UPDATE alert_triggers SET status = 'resolved', resolved_at = now()
        WHERE group_key = $1 AND fingerprint = $2 AND status = 'firing' RETURNING run_id`,
      [groupKey, fingerprint],
    );
    return rows.map((r) => r.run_id).filter((id): id is string => id !== null);
  }
}

function toRule(row: Row): StoredAlertRule {
  return {
    id: String(row.id),
    name: String(row.name),
    matchLabels: row.matchers as Record<string, string>,
    campaignId: String(row.campaign_id),
    createdAt: new Date(row.created_at as string | Date).getTime(),
  };
}
