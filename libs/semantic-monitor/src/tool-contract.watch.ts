import { Detectors } from '@fathom/contracts';
import {
  envelope,
  type CampaignSpec,
  type DetectorSignal,
  type RequestRecord,
  type RequestTelemetry,
  type ToolCallObservation,
} from '@fathom/contracts';
import {
  ToolContractTracker,
  checkShapeAgainstSchema,
  declaredToolContracts,
  normalizeToolVersion,
  type DeclaredToolContract,
} from '@fathom/semantic';

/**
 * Calls of one tool version a field the contract does not declare must have been seen in, all
 * of them, to read as a new required field (`required-added`); present in only some of them it
 * is `property-added`. Three in a row is the least that tells "always" from chance.
 */
export const REQUIRED_ADDED_MIN_CALLS = 3;
/** Records of a run held while its campaign (shard command) is not known yet. */
const MAX_HELD_RECORDS = 1000;
/** Undeclared paths followed per tool version (a shape has at most 64 paths). */
const MAX_NEW_FIELDS = 64;

type Change = 'type-changed' | 'required-removed' | 'required-added' | 'property-added' | 'enum-widened';

interface VersionState {
  /** Calls judged against the declared schema so far. */
  judged: number;
  /** Undeclared field -> when it was first seen (in `judged` calls) and in how many since. */
  readonly newFields: Map<string, { since: number; present: number; decided: boolean }>;
  /** Paths already reported: drift signals are deduplicated per run, tool, version and path. */
  readonly reported: Set<string>;
  /** The contract of this version is unusable (reported once). */
  unusableReported: boolean;
}

interface RunContracts {
  campaignId: string;
  /** null until the run's campaign spec arrived. */
  declared: Map<string, DeclaredToolContract> | null;
  held: { batch: RequestTelemetry; record: RequestRecord }[];
  readonly tracker: ToolContractTracker;
  readonly versions: Map<string, VersionState>;
}

/**
 * Tool schema drift in the load stream (spec, anomaly class 4): every tool call a record carries
 * (`RequestRecord.toolCalls`, with the observed shape of its JSON answer) is checked against the
 * response schema the campaign declares for that tool and version. A changed type, a dropped
 * required field or a value outside an enum is a drift at once; a field the contract does not
 * declare is a drift once REQUIRED_ADDED_MIN_CALLS calls decide whether it is always sent
 * (`required-added`) or not (`property-added`). One `schema-drift` detector signal per run,
 * tool, version and path, with the path and the kind of change in its labels; contract pass
 * rate and fallback trigger rate per tool and version for the run's semantic summary.
 * Plain class, single owner (the semantic-monitor service); no I/O.
 */
export class ToolContractWatch {
  private readonly runs = new Map<string, RunContracts>();

  /** The run's campaign: which tools declare which contracts. Idempotent (one call per shard). */
  declare(campaignId: string, runId: string, spec: CampaignSpec): void {
    const run = this.run(campaignId, runId);
    run.declared ??= declaredToolContracts(spec.scenario);
  }

  /** Judges the tool calls of one record; returns the drift signals it raises. */
  observe(batch: RequestTelemetry, record: RequestRecord): DetectorSignal[] {
    const run = this.run(batch.campaignId, batch.runId);
    if (run.declared === null) {
      if (record.toolCalls?.length && run.held.length < MAX_HELD_RECORDS) run.held.push({ batch, record });
      return [];
    }
    const out: DetectorSignal[] = [];
    if (run.held.length > 0) {
      const held = run.held;
      run.held = [];
      for (const h of held) this.judgeRecord(run, h.batch, h.record, out);
    }
    this.judgeRecord(run, batch, record, out);
    return out;
  }

  /** Per tool and version: `tool.<name>@<version>.{calls,checked,contractPassRate,fallbackTriggerRate,driftedPaths}`. */
  figures(runId: string): Record<string, number> {
    const run = this.runs.get(runId);
    const figures: Record<string, number> = {};
    if (!run) return figures;
    for (const s of run.tracker.stats()) {
      const prefix = `tool.${s.tool}@${s.version}.`;
      figures[`${prefix}calls`] = s.calls;
      figures[`${prefix}checked`] = s.checked;
      if (s.contractPassRate !== null) figures[`${prefix}contractPassRate`] = s.contractPassRate;
      figures[`${prefix}fallbackTriggerRate`] = s.fallbackTriggerRate;
      figures[`${prefix}driftedPaths`] = run.versions.get(versionKey(s.tool, s.version))?.reported.size ?? 0;
    }
    return figures;
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }

  private run(campaignId: string, runId: string): RunContracts {
    let run = this.runs.get(runId);
    if (!run) {
      run = { campaignId, declared: null, held: [], tracker: new ToolContractTracker(), versions: new Map() };
      this.runs.set(runId, run);
    }
    return run;
  }

  private judgeRecord(
    run: RunContracts,
    batch: RequestTelemetry,
    record: RequestRecord,
    out: DetectorSignal[],
  ): void {
    for (const call of record.toolCalls ?? []) {
      const signals = this.judgeCall(run, batch, record, call);
      for (const s of signals) out.push(s);
    }
  }

  private judgeCall(
    run: RunContracts,
    batch: RequestTelemetry,
    record: RequestRecord,
    call: ToolCallObservation,
  ): DetectorSignal[] {
    const fallbackTriggered = call.fallbackTriggered === true;
    const declared = run.declared?.get(call.tool)?.forVersion(call.version) ?? null;
    // A failed call or one without an answer says nothing about the response contract.
    const judgeable =
      declared !== null && call.status < 300 && call.body !== 'no-response' && call.body !== 'too-large';
    if (!judgeable) {
      run.tracker.record({ tool: call.tool, version: call.version, contractPassed: null, fallbackTriggered });
      return [];
    }
    const state = this.versionState(run, call);
    const out: DetectorSignal[] = [];
    if (!declared.ok) {
      run.tracker.record({ tool: call.tool, version: call.version, contractPassed: null, fallbackTriggered });
      if (!state.unusableReported) {
        state.unusableReported = true;
        out.push(
          this.signal(
            batch,
            record,
            call,
            Detectors.toolContractUnusable,
            'warning',
            '$',
            null,
            declared.reason,
          ),
        );
      }
      return out;
    }
    state.judged++;
    if (call.shape === undefined) {
      // `empty` or `not-json` where a JSON document is declared.
      run.tracker.record({
        tool: call.tool,
        version: call.version,
        contractPassed: false,
        fallbackTriggered,
      });
      this.report(
        state,
        out,
        batch,
        record,
        call,
        '$',
        'type-changed',
        true,
        `declared JSON, observed ${call.body} body`,
      );
      return out;
    }
    const check = checkShapeAgainstSchema(declared.schema, call.shape, declared.root);
    run.tracker.record({
      tool: call.tool,
      version: call.version,
      contractPassed: check.violations.length === 0,
      fallbackTriggered,
    });
    for (const v of check.violations) {
      const detail =
        v.kind === 'type-changed'
          ? `declared ${describe(v.expected)}, observed ${describe(v.observed)}`
          : v.kind === 'enum-widened'
            ? `declared one of ${describe(v.expected)}, observed ${describe(v.observed)}`
            : v.kind === 'property-added'
              ? 'the contract forbids undeclared fields'
              : 'declared required, observed absent';
      // Each violation breaks a reader written against the contract (a forbidden extra field too).
      this.report(state, out, batch, record, call, v.path, v.kind, true, detail);
    }
    for (const path of check.undeclared) {
      let field = state.newFields.get(path);
      if (field === undefined) {
        if (state.newFields.size >= MAX_NEW_FIELDS) continue;
        field = { since: state.judged - 1, present: 0, decided: false };
        state.newFields.set(path, field);
      }
      field.present++;
    }
    for (const [path, field] of state.newFields) {
      const calls = state.judged - field.since;
      if (field.decided || calls < REQUIRED_ADDED_MIN_CALLS) continue;
      field.decided = true;
      const always = field.present === calls;
      this.report(
        state,
        out,
        batch,
        record,
        call,
        path,
        always ? 'required-added' : 'property-added',
        false,
        `not declared, present in ${field.present} of ${calls} answers since it first appeared`,
      );
    }
    return out;
  }

  private versionState(run: RunContracts, call: ToolCallObservation): VersionState {
    const key = versionKey(call.tool, call.version);
    let state = run.versions.get(key);
    if (!state) {
      state = { judged: 0, newFields: new Map(), reported: new Set(), unusableReported: false };
      run.versions.set(key, state);
    }
    return state;
  }

  private report(
    state: VersionState,
    out: DetectorSignal[],
    batch: RequestTelemetry,
    record: RequestRecord,
    call: ToolCallObservation,
    path: string,
    change: Change,
    breaking: boolean,
    detail: string,
  ): void {
    if (state.reported.has(path)) return;
    state.reported.add(path);
    const signal = this.signal(
      batch,
      record,
      call,
      Detectors.schemaDrift,
      breaking ? 'critical' : 'warning',
      path,
      change,
      `tool ${call.tool} ${call.version}: ${change} at ${path} (${detail})`,
    );
    signal.figures = { breaking: breaking ? 1 : 0, judgedCalls: state.judged, status: call.status };
    out.push(signal);
  }

  private signal(
    batch: RequestTelemetry,
    record: RequestRecord,
    call: ToolCallObservation,
    detector: string,
    severity: DetectorSignal['severity'],
    path: string,
    change: Change | null,
    message: string,
  ): DetectorSignal {
    return {
      ...envelope(batch.campaignId, batch.runId),
      // Derived: one signal per run, tool, version and path even when a batch is redelivered.
      id: `${batch.runId}/${detector}/${call.tool}/${call.version}/${path}`,
      kind: 'detector',
      detector,
      requestId: record.requestId,
      severity,
      message: message.slice(0, 1000),
      figures: {},
      labels: {
        tool: call.tool,
        version: call.version,
        path: path.slice(0, 300),
        ...(change === null ? {} : { change }),
      },
    };
  }
}

function versionKey(tool: string, version: string): string {
  return `${tool}\u0000${normalizeToolVersion(version)}`;
}

function describe(value: unknown): string {
  const text = Array.isArray(value) ? value.map((v) => JSON.stringify(v)).join(' | ') : String(value);
  return text.slice(0, 120);
}
