import { readFile, stat } from 'node:fs/promises';
import type { RunReportDocument } from '@fathom/analysis';
import { CliExit } from '../cli-exit';

export interface ReportSourceOptions {
  readonly api?: string;
  readonly dataDir?: string;
  readonly token?: string;
}

function isReportDocument(value: unknown): value is RunReportDocument {
  const v = value as Partial<RunReportDocument> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.runId === 'string' &&
    typeof v.summary === 'object' &&
    typeof v.tiers === 'object' &&
    typeof v.objectives === 'object'
  );
}

/** A report document from a parsed JSON value: the document itself (`--out json=`) or the API's `{document}`. */
function documentOf(value: unknown, from: string): RunReportDocument {
  const inner = (value as { document?: unknown } | null)?.document;
  if (isReportDocument(value)) return value;
  if (isReportDocument(inner)) return inner;
  throw new CliExit(
    2,
    `${from} is not a Fathom run report (written by --out json= or GET /v1/runs/:id/report)`,
  );
}

/**
 * The report of a run: `ref` is a file written by `--out json=` (or saved from the API), or a
 * run id read through `--api URL` (GET /v1/runs/:id/report) or from `--data-dir DIR` (the
 * embedded database of `fathom run --data-dir` / `fathom up`).
 */
export async function loadReport(ref: string, options: ReportSourceOptions): Promise<RunReportDocument> {
  if (await isFile(ref)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readFile(ref, 'utf8'));
    } catch (error) {
      throw new CliExit(2, `cannot read ${ref}: ${(error as Error).message}`);
    }
    return documentOf(parsed, ref);
  }
  if (options.api) return fromApi(ref, options.api, options.token);
  if (options.dataDir) return fromDataDir(ref, options.dataDir);
  throw new CliExit(
    2,
    `${ref}: no such file; for a run id, say where its report is with --api URL or --data-dir DIR`,
  );
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function fromApi(runId: string, api: string, token?: string): Promise<RunReportDocument> {
  const base = api.replace(/\/+$/, '');
  const headers: Record<string, string> = {};
  const bearer = token ?? process.env.FATHOM_API_TOKEN;
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const { request } = await import('undici');
  let res;
  try {
    res = await request(`${base}/v1/runs/${encodeURIComponent(runId)}/report`, { headers });
  } catch (error) {
    throw new CliExit(2, `cannot reach ${base}: ${(error as Error).message}`);
  }
  if (res.statusCode === 404) {
    await res.body.dump();
    throw new CliExit(2, `run ${runId}: no report at ${base} (unknown run, or not reported yet)`);
  }
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new CliExit(2, `run ${runId}: ${base} answered ${res.statusCode}`);
  }
  return documentOf(await res.body.json(), `${base}/v1/runs/${runId}/report`);
}

async function fromDataDir(runId: string, dataDir: string): Promise<RunReportDocument> {
  // Opening a folder that is not there would create an empty database in it.
  if (
    !(await stat(dataDir).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  )
    throw new CliExit(2, `--data-dir ${dataDir}: no such folder`);
  const { openDatabase, RunReportRepository } = await import('@fathom/storage');
  let db;
  try {
    db = await openDatabase({ kind: 'pglite', dataDir });
  } catch (error) {
    throw new CliExit(2, `cannot open the database in ${dataDir}: ${(error as Error).message}`);
  }
  try {
    const stored = await new RunReportRepository(db).latest(runId);
    if (!stored) throw new CliExit(2, `run ${runId}: no report in ${dataDir}`);
    return documentOf(stored.document, `run ${runId} in ${dataDir}`);
  } catch (error) {
    // A database that cannot be read (another version's schema, a damaged file) names itself.
    if (error instanceof CliExit) throw error;
    throw new CliExit(2, `run ${runId}: no report in ${dataDir} (${(error as Error).message})`);
  } finally {
    await db.close();
  }
}

/**
 * A shadow campaign's report as one HTML page: through `--api URL`
 * (GET /v1/shadow-campaigns/:id/report?format=html) or rendered from `--data-dir DIR`.
 */
export async function loadShadowReportHtml(id: string, options: ReportSourceOptions): Promise<string> {
  if (options.api) {
    const base = options.api.replace(/\/+$/, '');
    const headers: Record<string, string> = {};
    const bearer = options.token ?? process.env.FATHOM_API_TOKEN;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    const { request } = await import('undici');
    let res;
    try {
      res = await request(`${base}/v1/shadow-campaigns/${encodeURIComponent(id)}/report?format=html`, {
        headers,
      });
    } catch (error) {
      throw new CliExit(2, `cannot reach ${base}: ${(error as Error).message}`);
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new CliExit(
        2,
        res.statusCode === 404
          ? `shadow campaign ${id}: not at ${base}`
          : `shadow campaign ${id}: ${base} answered ${res.statusCode}`,
      );
    }
    return res.body.text();
  }
  if (!options.dataDir)
    throw new CliExit(2, `--shadow ${id}: say where it is with --api URL or --data-dir DIR`);
  if (
    !(await stat(options.dataDir).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  )
    throw new CliExit(2, `--data-dir ${options.dataDir}: no such folder`);
  const [{ openDatabase, ShadowRepository }, { renderShadowReportHtml }] = await Promise.all([
    import('@fathom/storage'),
    import('@fathom/analysis'),
  ]);
  let db;
  try {
    db = await openDatabase({ kind: 'pglite', dataDir: options.dataDir });
  } catch (error) {
    throw new CliExit(2, `cannot open the database in ${options.dataDir}: ${(error as Error).message}`);
  }
  try {
    const campaign = await new ShadowRepository(db).get(id);
    if (!campaign) throw new CliExit(2, `shadow campaign ${id}: not in ${options.dataDir}`);
    return renderShadowReportHtml({
      ...campaign,
      targets: {
        primary: campaign.config.primary.baseUrl,
        secondary: campaign.config.secondary.baseUrl,
        candidate: campaign.config.candidate.baseUrl,
      },
    });
  } catch (error) {
    if (error instanceof CliExit) throw error;
    throw new CliExit(
      2,
      `shadow campaign ${id}: not readable in ${options.dataDir} (${(error as Error).message})`,
    );
  } finally {
    await db.close();
  }
}
