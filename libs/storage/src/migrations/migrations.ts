/**
 * The schema, as an ordered list of migrations. Each runs once, in order, in the same
 * transaction as the others still pending, and is recorded in `schema_migrations`.
 *
 * WARNING: never edit or renumber a migration that has shipped; databases in the field have
 * already applied it. Change the schema by appending a new one.
 */
export type Migration = {
  /** 1, 2, 3, ... with no gaps: the order of application. */
  readonly version: number;
  readonly name: string;
  /**
   * One statement per entry: PGlite runs parameterised queries over the extended protocol,
   * which takes a single statement at a time.
   */
  readonly statements: readonly string[];
};

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'campaigns-runs-events-reports-baselines',
    statements: [
      `CREATE TABLE campaigns (
         id          text PRIMARY KEY,
         name        text NOT NULL,
         spec        jsonb NOT NULL,
         created_at  timestamptz NOT NULL DEFAULT now()
       )`,
      `CREATE INDEX campaigns_created_at_idx ON campaigns (created_at)`,
      `CREATE TABLE runs (
         id             text PRIMARY KEY,
         campaign_id    text NOT NULL REFERENCES campaigns (id),
         status         text NOT NULL
                          CHECK (status IN ('pending', 'running', 'completed', 'failed', 'aborted')),
         trigger        text NOT NULL,
         parent_run_id  text REFERENCES runs (id),
         reason         text,
         created_at     timestamptz NOT NULL DEFAULT now(),
         started_at     timestamptz,
         ended_at       timestamptz,
         summary        jsonb
       )`,
      `CREATE INDEX runs_campaign_id_idx ON runs (campaign_id, created_at)`,
      `CREATE INDEX runs_status_idx ON runs (status, created_at)`,
      // No foreign key to runs: events are stored as they arrive from the bus, and an event must
      // never be lost because its run row is not (yet) in this store.
      `CREATE TABLE run_events (
         event_id     text PRIMARY KEY,
         run_id       text NOT NULL,
         topic        text NOT NULL,
         kind         text NOT NULL,
         occurred_at  timestamptz NOT NULL,
         payload      jsonb NOT NULL
       )`,
      `CREATE INDEX run_events_run_id_idx ON run_events (run_id, occurred_at)`,
      `CREATE TABLE run_reports (
         run_id      text NOT NULL REFERENCES runs (id),
         version     integer NOT NULL CHECK (version >= 1),
         document    jsonb NOT NULL,
         created_at  timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (run_id, version)
       )`,
      `CREATE TABLE baselines (
         id           text PRIMARY KEY,
         campaign_id  text NOT NULL REFERENCES campaigns (id),
         name         text NOT NULL,
         created_at   timestamptz NOT NULL DEFAULT now(),
         data         jsonb NOT NULL
       )`,
      `CREATE INDEX baselines_campaign_id_idx ON baselines (campaign_id, created_at)`,
    ],
  },
  {
    version: 2,
    name: 'orchestrator-alert-rules-triggers-schedules-shadow',
    statements: [
      // Alertmanager label rules: an alert whose labels include every matcher starts the campaign.
      `CREATE TABLE alert_rules (
         id           text PRIMARY KEY,
         name         text NOT NULL,
         matchers     jsonb NOT NULL,
         campaign_id  text NOT NULL REFERENCES campaigns (id),
         created_at   timestamptz NOT NULL DEFAULT now()
       )`,
      // One row per (group key, alert fingerprint, firing episode, rule): the primary key is the
      // de-duplication, so 100 copies of one notification insert (and start) once.
      `CREATE TABLE alert_triggers (
         group_key    text NOT NULL,
         fingerprint  text NOT NULL,
         starts_at    text NOT NULL,
         rule_id      text NOT NULL REFERENCES alert_rules (id),
         run_id       text REFERENCES runs (id),
         status       text NOT NULL CHECK (status IN ('firing', 'resolved')),
         received_at  timestamptz NOT NULL DEFAULT now(),
         resolved_at  timestamptz,
         PRIMARY KEY (group_key, fingerprint, starts_at, rule_id)
       )`,
      `CREATE INDEX alert_triggers_open_idx ON alert_triggers (group_key, fingerprint, status)`,
      `CREATE TABLE schedules (
         id           text PRIMARY KEY,
         campaign_id  text NOT NULL REFERENCES campaigns (id),
         mode         text NOT NULL CHECK (mode IN ('interval', 'always-on')),
         interval_ms  bigint NOT NULL CHECK (interval_ms >= 0),
         enabled      boolean NOT NULL DEFAULT true,
         next_run_at  timestamptz NOT NULL,
         last_run_id  text REFERENCES runs (id),
         created_at   timestamptz NOT NULL DEFAULT now()
       )`,
      `CREATE TABLE shadow_campaigns (
         id          text PRIMARY KEY,
         name        text NOT NULL,
         config      jsonb NOT NULL,
         status      text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
         reason      text,
         report      jsonb,
         created_at  timestamptz NOT NULL DEFAULT now(),
         ended_at    timestamptz
       )`,
      // Requests are stored only after redaction (the shadow service redacts before it writes).
      `CREATE TABLE shadow_samples (
         id                  text PRIMARY KEY,
         shadow_campaign_id  text NOT NULL REFERENCES shadow_campaigns (id),
         endpoint            text NOT NULL,
         intent              text NOT NULL,
         request             jsonb NOT NULL,
         observations        jsonb NOT NULL,
         created_at          timestamptz NOT NULL DEFAULT now()
       )`,
      `CREATE INDEX shadow_samples_campaign_idx ON shadow_samples (shadow_campaign_id, created_at)`,
    ],
  },
  {
    version: 3,
    name: 'baselines-run-id',
    statements: [
      // The run a baseline was recorded from (a campaign spec may pin `compareWith: { runId }`).
      // No foreign key: a baseline stays usable after its run row is pruned.
      `ALTER TABLE baselines ADD COLUMN run_id text`,
      // One baseline of a kind per run: a redelivered end-of-run must not store a second copy.
      `CREATE UNIQUE INDEX baselines_run_id_name_idx ON baselines (run_id, name) WHERE run_id IS NOT NULL`,
    ],
  },
  {
    version: 4,
    name: 'durable-reruns',
    statements: [
      // A rerun asked for while its run was still open (a tier or breaker change): considered when
      // the run's report arrives. One per run: later asks fold into the first (its reason is kept).
      `CREATE TABLE rerun_requests (
         parent_run_id  text PRIMARY KEY REFERENCES runs (id),
         reason         text NOT NULL,
         created_at     timestamptz NOT NULL DEFAULT now()
       )`,
      // A rerun decided on and waiting for its time (cool-down, backoff). Starting it moves it to
      // 'started' and creates its run in one transaction, conditionally on 'scheduled', so an
      // orchestrator restarted (or a second one) starts it once; run_id is then the run started.
      `CREATE TABLE scheduled_reruns (
         id             text PRIMARY KEY,
         campaign_id    text NOT NULL REFERENCES campaigns (id),
         parent_run_id  text NOT NULL REFERENCES runs (id),
         reason         text NOT NULL,
         due_at         timestamptz NOT NULL,
         status         text NOT NULL CHECK (status IN ('scheduled', 'started')),
         run_id         text UNIQUE REFERENCES runs (id),
         created_at     timestamptz NOT NULL DEFAULT now(),
         started_at     timestamptz
       )`,
      // One rerun waiting per campaign (the rerun policy's debounce), held by the database.
      `CREATE UNIQUE INDEX scheduled_reruns_waiting_idx ON scheduled_reruns (campaign_id) WHERE status = 'scheduled'`,
    ],
  },
  {
    version: 5,
    name: 'alert-triggers-coalesced',
    statements: [
      // true: the firing alert found a run of its campaign already open and joined it (run_id)
      // instead of starting a second one; false: run_id is the run the alert started.
      `ALTER TABLE alert_triggers ADD COLUMN coalesced boolean NOT NULL DEFAULT false`,
      `CREATE INDEX alert_triggers_run_id_idx ON alert_triggers (run_id, status)`,
    ],
  },
  {
    version: 6,
    name: 'runs-plan-published-at',
    statements: [
      // When the run's plan (its shard commands) was handed to the bus; null while it waits for
      // it. The run row commits first, then the plan is published and this is set in one
      // transaction, so a plan an orchestrator died before publishing (or the bus refused) is
      // still owed, and the next orchestrator to look publishes it: a transactional outbox.
      `ALTER TABLE runs ADD COLUMN plan_published_at timestamptz`,
      // Runs from before this column: their plans were handed out (or the run failed) by the code
      // of their day, which left no trace of which; counting them published never starts one twice.
      `UPDATE runs SET plan_published_at = COALESCE(started_at, created_at)`,
      // The owed plans, read on every reconcile pass.
      `CREATE INDEX runs_plan_owed_idx ON runs (created_at) WHERE plan_published_at IS NULL`,
    ],
  },
  {
    version: 7,
    name: 'runs-status-partial',
    statements: [
      // A run whose generator stopped reporting before its shard ended ends `partial`, with the
      // summary of what was measured (it used to end `failed` with no summary).
      `ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_status_check`,
      `ALTER TABLE runs ADD CONSTRAINT runs_status_check
         CHECK (status IN ('pending', 'running', 'completed', 'partial', 'failed', 'aborted'))`,
    ],
  },
  {
    version: 8,
    name: 'shadow-samples-seq',
    statements: [
      // Samples in the order they were stored. created_at ties (PGlite's clock ticks in
      // milliseconds; a live campaign stores many samples a millisecond) were broken by a random
      // id, so the stored order, and which are the newest `keepSamples` a live campaign keeps,
      // were a draw among the tied. Existing rows are numbered in their stored order.
      `ALTER TABLE shadow_samples ADD COLUMN seq bigserial`,
      `CREATE INDEX shadow_samples_campaign_seq_idx ON shadow_samples (shadow_campaign_id, seq)`,
      `DROP INDEX shadow_samples_campaign_idx`,
    ],
  },
  {
    version: 9,
    name: 'shadow-breakers',
    statements: [
      // The analyzer's breaker on a live shadow campaign's candidate, one row per breaker, written
      // after each window it judges: a restarted analyzer, or the one that takes the campaign's
      // partition over, goes on from it. Not in run_events: those keep the newest 1,440 per
      // campaign, and a breaker open for longer would lose the change that opened it.
      `CREATE TABLE shadow_breakers (
         run_id          text NOT NULL,
         target          text NOT NULL,
         layer           text NOT NULL,
         node            text NOT NULL,
         state           text NOT NULL CHECK (state IN ('closed', 'open', 'half-open')),
         since           timestamptz,
         opened_at       timestamptz,
         outcomes        jsonb NOT NULL,
         probes          jsonb NOT NULL,
         paths           jsonb NOT NULL,
         judged_until    timestamptz NOT NULL,
         last_signal_id  text NOT NULL,
         updated_at      timestamptz NOT NULL DEFAULT now(),
         PRIMARY KEY (run_id, target, layer, node)
       )`,
    ],
  },
  {
    version: 10,
    name: 'shadow-campaign-leases',
    statements: [
      // The orchestrator running a shadow campaign holds it until lease_until, renewing it while
      // it runs; another one takes it over (live: runs it on; others: fails it, their source
      // position is lost) once the lease has expired. Campaigns running before this migration
      // have no lease: the first orchestrator to look takes them over. Times are the database's
      // clock, so replicas with skewed clocks agree on who holds what.
      `ALTER TABLE shadow_campaigns ADD COLUMN owner text`,
      `ALTER TABLE shadow_campaigns ADD COLUMN lease_until timestamptz`,
      `CREATE INDEX shadow_campaigns_running_lease_idx ON shadow_campaigns (lease_until) WHERE status = 'running'`,
    ],
  },
];
