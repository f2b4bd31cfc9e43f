import {
  Detectors,
  envelope,
  type DetectorSignal,
  type RequestRecord,
  type RequestTelemetry,
} from '@fathom/contracts';
import { BUNDLED_ANOMALY_MODEL, LlmMonitor, type Fragment, type MonitorVerdict } from '@fathom/semantic';
import type { TimeSliceClock } from './time-slice.util';

/** Fragments per `assess` call: the rules and features of one chunk stay well inside a time slice. */
const FRAGMENTS_PER_CHUNK = 64;
/** The load-generator's prefix on an error body (`HTTP 503: {...}`): the body is the fragment. */
const HTTP_STATUS_PREFIX = /^HTTP \d{3}: /;
/** Characters of the fragment a signal quotes. */
const EXCERPT_CHARS = 120;

interface RunCounts {
  fragments: number;
  anomalies: number;
  ruleHits: number;
  modelHits: number;
  cacheHits: number;
  /** The run was told the monitor is on rules only (once). */
  rulesOnlyReported: boolean;
}

/**
 * The LLM monitor as a consumer of the telemetry stream: every record's response text and error
 * message become fragments, judged by `LlmMonitor` (rules, then the anomaly model), and each
 * anomalous one becomes a `semantic-anomaly` detector signal, except an error body found in a
 * failed request's error message (expected there; the `errorClass` already says it failed). The model loads with the first
 * batch (an idle service loads none); `FATHOM_LLM_MONITOR_MODEL=off` runs the rules only. A model
 * that fails to load, or a model run that fails, is said once per run as a `semantic-monitor-fault`
 * and the rules go on; nothing here throws on a fragment.
 *
 * Log fragments: the monitor judges what the telemetry carries (response text, error messages
 * and bodies kept by the load-generator); it reads no target logs.
 */
export class LlmMonitorWatch {
  private monitor: Promise<LlmMonitor> | null = null;
  private readonly runs = new Map<string, RunCounts>();

  /** @param model FATHOM_LLM_MONITOR_MODEL: `bundled`, `off`, or a path to an `.onnx`. */
  constructor(
    private readonly model: string,
    private readonly warn: (message: string) => void,
  ) {}

  /** The monitor, loading it on first use; resolves rules-only when the model cannot be used. */
  ready(): Promise<LlmMonitor> {
    this.monitor ??= (async () => {
      if (this.model === 'off') return LlmMonitor.rulesOnly('FATHOM_LLM_MONITOR_MODEL=off');
      const monitor = await LlmMonitor.load(this.model === 'bundled' ? BUNDLED_ANOMALY_MODEL : this.model);
      if (monitor.state.kind === 'rules-only')
        this.warn(`LLM monitor on rules only: ${monitor.state.reason}`);
      return monitor;
    })();
    return this.monitor;
  }

  /** The batch's anomaly signals; a failure of the monitor itself comes back as a monitor-fault, never thrown. */
  async observe(batch: RequestTelemetry, clock: TimeSliceClock): Promise<DetectorSignal[]> {
    try {
      return await this.judge(batch, clock);
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      this.warn(`LLM monitor failed on telemetry ${batch.id}: ${text}`);
      return [
        signal(
          batch,
          `${batch.id}/llm-monitor/fault`,
          null,
          Detectors.monitorFault,
          `LLM monitor could not judge this batch: ${text}`,
          {},
        ),
      ];
    }
  }

  private async judge(batch: RequestTelemetry, clock: TimeSliceClock): Promise<DetectorSignal[]> {
    const monitor = await this.ready();
    const counts = this.counts(batch.runId);
    const out: DetectorSignal[] = [];
    if (monitor.state.kind === 'rules-only' && this.model !== 'off' && !counts.rulesOnlyReported) {
      counts.rulesOnlyReported = true;
      out.push(
        signal(
          batch,
          `${batch.runId}/llm-monitor/rules-only`,
          null,
          Detectors.monitorFault,
          `LLM monitor on rules only: ${monitor.state.reason}`,
          {
            llmMonitorModel: 0,
          },
        ),
      );
    }
    const fragments: Fragment[] = [];
    const owners: RequestRecord[] = [];
    for (const record of batch.records) {
      if (record.content.trim().length > 0) {
        fragments.push({ source: 'response', text: record.content });
        owners.push(record);
      }
      const body = record.errorMessage?.replace(HTTP_STATUS_PREFIX, '') ?? '';
      if (body.trim().length > 0) {
        fragments.push({ source: 'error', text: body });
        owners.push(record);
      }
    }
    const errorsBefore = monitor.stats.modelErrors;
    for (let start = 0; start < fragments.length; start += FRAGMENTS_PER_CHUNK) {
      if (clock.due()) await clock.yield();
      const chunk = fragments.slice(start, start + FRAGMENTS_PER_CHUNK);
      const verdicts = await monitor.assess(chunk);
      verdicts.forEach((v, n) => {
        const i = start + n;
        counts.fragments++;
        if (v.cached) counts.cacheHits++;
        // A failed request's body being an error is what it should be: counted, not signalled.
        if (!v.anomalous || (fragments[i].source === 'error' && v.label === 'error-body')) return;
        counts.anomalies++;
        if (v.decidedBy === 'rule') counts.ruleHits++;
        else counts.modelHits++;
        out.push(anomalySignal(batch, owners[i], fragments[i], v));
      });
    }
    if (monitor.stats.modelErrors > errorsBefore)
      out.push(
        signal(
          batch,
          `${batch.id}/llm-monitor/model-error`,
          null,
          Detectors.monitorFault,
          `LLM monitor: the anomaly model failed on a batch, judged by the rules only: ${monitor.lastModelError}`,
          { llmMonitorModelErrors: monitor.stats.modelErrors },
        ),
      );
    return out;
  }

  /** The run's monitor figures for its goodput summary (`llmMonitor.*`). */
  figures(runId: string): Record<string, number> {
    const c = this.runs.get(runId);
    if (!c) return {};
    return {
      'llmMonitor.fragments': c.fragments,
      'llmMonitor.anomalies': c.anomalies,
      'llmMonitor.ruleHits': c.ruleHits,
      'llmMonitor.modelHits': c.modelHits,
      'llmMonitor.cacheHits': c.cacheHits,
    };
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }

  async close(): Promise<void> {
    const monitor = this.monitor;
    this.monitor = null;
    await (await monitor)?.close();
  }

  private counts(runId: string): RunCounts {
    let c = this.runs.get(runId);
    if (!c) {
      c = { fragments: 0, anomalies: 0, ruleHits: 0, modelHits: 0, cacheHits: 0, rulesOnlyReported: false };
      this.runs.set(runId, c);
    }
    return c;
  }
}

function anomalySignal(
  batch: RequestTelemetry,
  record: RequestRecord,
  fragment: Fragment,
  v: MonitorVerdict,
): DetectorSignal {
  const how =
    v.decidedBy === 'rule' ? `rule ${v.rule}` : `model confidence ${(v.modelConfidence ?? 0).toFixed(2)}`;
  const excerpt = excerptOf(fragment.text);
  return {
    ...signal(
      batch,
      `${batch.id}/${record.requestId}/anomaly/${fragment.source}`,
      record.requestId,
      Detectors.semanticAnomaly,
      `semantic anomaly in the ${fragment.source}: ${v.label} (${how}): "${excerpt}"`,
      {
        confidence: v.decidedBy === 'rule' ? 1 : (v.modelConfidence ?? 0),
        ruleHit: v.decidedBy === 'rule' ? 1 : 0,
        cached: v.cached ? 1 : 0,
      },
    ),
    severity: 'warning',
    labels: {
      label: v.label,
      decidedBy: v.decidedBy ?? 'none',
      fragment: fragment.source,
      ...(v.rule ? { rule: v.rule } : {}),
      excerpt,
    },
  };
}

function signal(
  batch: { campaignId: string; runId: string },
  id: string,
  requestId: string | null,
  detector: string,
  message: string,
  figures: Record<string, number>,
): DetectorSignal {
  return {
    ...envelope(batch.campaignId, batch.runId),
    id,
    kind: 'detector',
    detector,
    requestId,
    severity: 'warning',
    message,
    figures,
  };
}

function excerptOf(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= EXCERPT_CHARS ? flat : `${flat.slice(0, EXCERPT_CHARS - 1)}…`;
}
