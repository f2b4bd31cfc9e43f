import type { RunSummary } from '@fathom/contracts';
import { decideSchedule, nextSlotAfter } from './schedule.util';
import { reconcileOpenRun } from './run-reconcile.util';
import { labelsMatch } from '@fathom/contracts';
import { buildOpenApiDocument } from './openapi.document';

function runSummary(): RunSummary {
  const quantiles = { count: 100, mean: 200, p50: 190, p95: 400, p99: 610, max: 700 };
  return {
    status: 'completed',
    reason: null,
    startedAt: 1_700_000_000_000,
    endedAt: 1_700_000_010_000,
    requests: 100,
    errors: 0,
    errorRate: 0,
    errorClasses: {},
    dropped: 0,
    latencyMs: { e2e: quantiles, correctedE2e: quantiles, ttft: quantiles, itl: quantiles },
    throughput: { requestsPerSec: 10, outputTokensPerSec: 640 },
    tokens: { input: 2000, output: 6400 },
    semantic: {
      responses: 100,
      outputTokens: 6400,
      gapMeanMs: 14,
      tokenCountMismatches: 0,
      detectorSignals: 0,
    },
    gpu: { scrapes: 0, gaps: 0, last: {} },
    tier: 'SLO-0',
    tierChanges: [],
    slo: { passed: true, failures: [] },
  };
}

describe(decideSchedule.name, () => {
  const interval = { mode: 'interval' as const, intervalMs: 1000, nextRunAt: 10_000 };
  it('starts an interval slot and moves to the next slot after now, skipping missed ones', () => {
    expect(decideSchedule(interval, false, null, 13_500)).toEqual({
      start: true,
      nextRunAt: 14_000,
      why: 'interval slot',
    });
  });
  it('skips a slot while the campaign still runs', () => {
    expect(decideSchedule(interval, true, null, 10_000)).toMatchObject({ start: false, nextRunAt: 11_000 });
  });
  it('keeps an always-on campaign waiting for its previous run and its gap', () => {
    const alwaysOn = { mode: 'always-on' as const, intervalMs: 500, nextRunAt: 0 };
    expect(decideSchedule(alwaysOn, true, null, 1000).start).toBe(false);
    expect(decideSchedule(alwaysOn, false, 800, 1000)).toMatchObject({ start: false, nextRunAt: 1300 });
    expect(decideSchedule(alwaysOn, false, 400, 1000)).toMatchObject({ start: true, nextRunAt: 1000 });
  });
  it('computes the next slot', () => {
    expect(nextSlotAfter(0, 100, 0)).toBe(100);
    expect(nextSlotAfter(0, 100, 250)).toBe(300);
  });
});

describe(reconcileOpenRun.name, () => {
  const run = {
    id: 'r',
    status: 'running' as const,
    createdAt: 1000,
    startedAt: 2000,
    planPublishedAt: 1000,
  };
  it('applies a stored report', () => {
    expect(reconcileOpenRun(run, 10_000, runSummary(), 3000, 60_000, 600_000)).toMatchObject({
      action: 'apply-report',
      status: 'completed',
    });
  });
  it('keeps a run until its planned end plus grace, then fails it with the reason', () => {
    expect(reconcileOpenRun(run, 10_000, null, 2000 + 10_000 + 59_999, 60_000, 600_000)).toEqual({
      action: 'keep',
    });
    const failed = reconcileOpenRun(run, 10_000, null, 2000 + 10_000 + 60_000, 60_000, 600_000);
    expect(failed).toMatchObject({ action: 'fail' });
    expect(failed.action === 'fail' && failed.reason).toMatch(/no report 70 s after the run started/);
  });
  it('waits for a run that no generator started yet (queued at its shard cap) the start grace, then fails it', () => {
    const pending = { ...run, status: 'pending' as const, startedAt: null, planPublishedAt: 1500 };
    // Past the planned end plus the run grace, but within the start grace: queued, not lost.
    expect(reconcileOpenRun(pending, 0, null, 1500 + 60_000, 5000, 600_000)).toEqual({ action: 'keep' });
    expect(reconcileOpenRun(pending, 0, null, 1500 + 599_999, 5000, 600_000)).toEqual({ action: 'keep' });
    const failed = reconcileOpenRun(pending, 0, null, 1500 + 600_000, 5000, 600_000);
    expect(failed).toMatchObject({ action: 'fail' });
    expect(failed.action === 'fail' && failed.reason).toMatch(
      /no load-generator started it 600 s after its plan was published .* shard cap/,
    );
  });
  it('keeps a pending run whose plan is still owed, however old: the outbox publishes it', () => {
    const owed = { ...run, status: 'pending' as const, startedAt: null, planPublishedAt: null };
    expect(reconcileOpenRun(owed, 10_000, null, 1000 + 3_600_000, 5000, 600_000)).toEqual({ action: 'keep' });
    // A stored report still decides.
    expect(reconcileOpenRun(owed, 10_000, runSummary(), 1000 + 3_600_000, 5000, 600_000)).toMatchObject({
      action: 'apply-report',
    });
  });
});

describe(labelsMatch.name, () => {
  it('needs every listed label with its exact value', () => {
    expect(labelsMatch({ alertname: 'A' }, { alertname: 'A', severity: 'page' })).toBe(true);
    expect(labelsMatch({ alertname: 'A', severity: 'page' }, { alertname: 'A' })).toBe(false);
    expect(labelsMatch({ alertname: 'A' }, { alertname: 'a' })).toBe(false);
  });
});

describe(buildOpenApiDocument.name, () => {
  it('describes every route with JSON schemas built from the zod contracts', () => {
    const doc = buildOpenApiDocument() as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/campaigns',
        '/v1/runs/{id}/abort',
        '/v1/hooks/alertmanager',
        '/v1/alert-rules',
        '/v1/schedules',
      ]),
    );
    expect(Object.keys(doc.components.schemas.CampaignSpec.properties ?? {})).toEqual(
      expect.arrayContaining(['name', 'target', 'scenario', 'load']),
    );
  });
});
