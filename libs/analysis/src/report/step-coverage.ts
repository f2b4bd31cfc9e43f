import {
  declaredAssertionNames,
  type AssertionCoverage,
  type AssertionTally,
  type CampaignSpec,
  type RunLifecycle,
  type StepFigures,
  type StepTally,
} from '@fathom/contracts';

/** Shards that ended with their counts (a started event carries empty ones). */
function ended(lifecycle: readonly RunLifecycle[]): RunLifecycle[] {
  return lifecycle.filter((l) => l.phase !== 'shard-started');
}

/**
 * Which named assertions ran, passed, failed and never ran: the campaign's declared ones (steps
 * scenarios) in step order, then any other a driver tallied (`workflow.*`, `tool.*`), by name.
 * Null when the run neither declared nor tallied one.
 */
export function assertionCoverage(
  spec: CampaignSpec | null,
  lifecycle: readonly RunLifecycle[],
): AssertionCoverage | null {
  const tallies = new Map<string, AssertionTally>();
  for (const l of ended(lifecycle))
    for (const [name, t] of Object.entries(l.counts?.assertions ?? {})) {
      const sum = tallies.get(name) ?? { passed: 0, failed: 0 };
      tallies.set(name, { passed: sum.passed + t.passed, failed: sum.failed + t.failed });
    }
  const declared = spec?.scenario.type === 'http' ? declaredAssertionNames(spec.scenario) : [];
  const declaredSet = new Set(declared);
  const others = [...tallies.keys()].filter((n) => !declaredSet.has(n)).sort();
  if (declared.length === 0 && others.length === 0) return null;
  const byName = [...declared, ...others].map((name) => {
    const t = tallies.get(name) ?? { passed: 0, failed: 0 };
    const state: AssertionCoverage['byName'][number]['state'] =
      t.failed > 0 ? 'failed' : t.passed > 0 ? 'passed' : 'never-ran';
    return { name, declared: declaredSet.has(name), state, passes: t.passed, failures: t.failed };
  });
  const count = (state: string) => byName.filter((a) => a.state === state).length;
  return {
    declared: declared.length,
    ran: byName.length - count('never-ran'),
    passed: count('passed'),
    failed: count('failed'),
    neverRan: count('never-ran'),
    byName,
  };
}

/** One row per step of a steps scenario, summed over the shards that ended; null for other scenarios. */
export function stepFigures(
  spec: CampaignSpec | null,
  lifecycle: readonly RunLifecycle[],
): StepFigures[] | null {
  if (spec?.scenario.type !== 'http') return null;
  const shards = ended(lifecycle);
  return spec.scenario.steps.map((step) => {
    const t = shards.reduce<StepTally>(
      (sum, l) => {
        const s = l.counts?.steps?.[step.name];
        if (!s) return sum;
        return {
          runs: sum.runs + s.runs,
          failed: sum.failed + s.failed,
          skipped: sum.skipped + s.skipped,
          slaMisses: sum.slaMisses + s.slaMisses,
          latencyMsSum: sum.latencyMsSum + s.latencyMsSum,
          latencyMsMax: Math.max(sum.latencyMsMax, s.latencyMsMax),
          firstMessages: sum.firstMessages + s.firstMessages,
          firstMessageMsSum: sum.firstMessageMsSum + s.firstMessageMsSum,
          messages: sum.messages + s.messages,
        };
      },
      {
        runs: 0,
        failed: 0,
        skipped: 0,
        slaMisses: 0,
        latencyMsSum: 0,
        latencyMsMax: 0,
        firstMessages: 0,
        firstMessageMsSum: 0,
        messages: 0,
      },
    );
    return {
      name: step.name,
      kind: step.kind ?? 'http',
      budgetMs: step.budgetMs ?? null,
      concurrency: step.concurrency ?? null,
      runs: t.runs,
      failed: t.failed,
      skipped: t.skipped,
      slaMisses: t.slaMisses,
      latencyMeanMs: t.runs ? t.latencyMsSum / t.runs : null,
      latencyMaxMs: t.runs ? t.latencyMsMax : null,
      firstMessageMeanMs: t.firstMessages ? t.firstMessageMsSum / t.firstMessages : null,
      messages: t.messages,
    };
  });
}
