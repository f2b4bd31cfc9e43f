import { Option, type Command } from 'commander';
import { CliExit } from '../cli-exit';

/** `fathom run` flags that replace fields of the campaign file (k6's `--vus`/`--duration`). */
export interface RunOverrides {
  target?: string;
  concurrency?: string;
  rate?: string;
  duration?: string;
}

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function addRunOverrideOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--target <url>',
        "replace target.baseUrl, e.g. http://127.0.0.1:8000/v1 (metrics URLs on the old base URL's host move with it)",
      ),
    )
    .addOption(
      new Option('--concurrency <n>', 'replace load.concurrency (virtual users, or the in-flight cap)'),
    )
    .addOption(
      new Option(
        '--rate <r>',
        'requests per second: sets ratePerSec of a constant-rate or poisson profile; a closed (or absent) profile becomes constant-rate',
      ),
    )
    .addOption(
      new Option('--duration <d>', 'replace load.durationMs: 30s, 2m, 1h30m, 500ms or milliseconds'),
    );
}

/** `30s`, `2m`, `1h30m`, `500ms`, or a bare number of milliseconds; null when not a duration. */
export function parseDurationMs(text: string): number | null {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== trimmed) return null;
  const ms = parts.reduce((sum, [, n, unit]) => sum + Number(n) * DURATION_UNITS_MS[unit], 0);
  return Math.round(ms);
}

function positiveNumber(flag: string, text: string, integer: boolean): number {
  const value = Number(text);
  if (!text.trim() || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value)))
    throw new CliExit(2, `${flag} must be a positive ${integer ? 'integer' : 'number'}, got '${text}'`);
  return value;
}

function objectAt(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = parent[key];
  if (value !== null && typeof value === 'object' && !Array.isArray(value))
    return value as Record<string, unknown>;
  const created: Record<string, unknown> = {};
  parent[key] = created;
  return created;
}

function originOf(url: unknown): string | null {
  if (typeof url !== 'string') return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/**
 * The metrics URLs once the target moved from `before` to `after`: those served by the old base
 * URL's origin (a vLLM server's own /metrics) move to the new origin; others (a DCGM exporter
 * elsewhere) stay. Anything unparsable is left for validation to name.
 */
function movedMetricsUrls(metricsUrls: unknown, before: unknown, after: string): unknown {
  const from = originOf(before);
  const to = originOf(after);
  if (from === null || to === null || from === to || !Array.isArray(metricsUrls)) return metricsUrls;
  return metricsUrls.map((url: unknown) => {
    if (typeof url !== 'string' || originOf(url) !== from) return url;
    const moved = new URL(url);
    const dest = new URL(to);
    moved.protocol = dest.protocol;
    moved.host = dest.host;
    return moved.toString();
  });
}

/**
 * The campaign as read from its file with the flags applied (a copy; the input is not changed).
 * The result is validated as any campaign is, so a flag that makes it invalid is named there.
 */
export function applyRunOverrides(input: unknown, overrides: RunOverrides): unknown {
  const flags = [overrides.target, overrides.concurrency, overrides.rate, overrides.duration];
  if (flags.every((f) => f === undefined)) return input;
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw new CliExit(
      2,
      'the campaign file is not an object, so --target/--concurrency/--rate/--duration cannot apply',
    );
  const campaign = structuredClone(input) as Record<string, unknown>;
  if (overrides.target !== undefined) {
    const target = objectAt(campaign, 'target');
    if ('metricsUrls' in target)
      target.metricsUrls = movedMetricsUrls(target.metricsUrls, target.baseUrl, overrides.target);
    target.baseUrl = overrides.target;
  }
  const load = () => objectAt(campaign, 'load');
  if (overrides.concurrency !== undefined)
    load().concurrency = positiveNumber('--concurrency', overrides.concurrency, true);
  if (overrides.duration !== undefined) {
    const ms = parseDurationMs(overrides.duration);
    if (ms === null || ms <= 0)
      throw new CliExit(2, `--duration must look like 30s, 2m, 1h30m or 500ms, got '${overrides.duration}'`);
    load().durationMs = ms;
  }
  if (overrides.rate !== undefined) {
    const ratePerSec = positiveNumber('--rate', overrides.rate, false);
    const profile = load().profile as { type?: unknown; seed?: unknown } | undefined;
    const type = profile?.type ?? 'closed';
    if (type === 'constant-rate' || type === 'poisson') load().profile = { ...profile, ratePerSec };
    else if (type === 'closed')
      load().profile = {
        type: 'constant-rate',
        ratePerSec,
        ...(profile?.seed !== undefined && { seed: profile.seed }),
      };
    else
      throw new CliExit(
        2,
        `--rate applies to a closed, constant-rate or poisson profile; load.profile.type is ${String(type)}`,
      );
  }
  return campaign;
}
