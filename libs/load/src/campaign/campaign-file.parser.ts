import { isMap, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { CampaignSpecSchema, type CampaignSpec } from '@fathom/contracts';
import { loadDataset } from '../dataset/prompt.source';
import { DatasetParseError } from '../dataset/dataset-parse.error';
import { loadReplay } from '../profile/replay.loader';

export interface CampaignIssue {
  /** Field path, e.g. `load.profile.ratePerSec`. */
  path: string;
  /** 1-based line in the campaign file (of the field, or of its parent when the field is missing). */
  line: number | null;
  message: string;
}

/** A campaign file or one of the files it names was refused; every issue names field and line. */
export class CampaignFileError extends Error {
  constructor(
    readonly file: string,
    readonly issues: CampaignIssue[],
  ) {
    super(
      issues
        .map((i) => `${file}${i.line === null ? '' : `:${i.line}`}: ${i.path || '(root)'}: ${i.message}`)
        .join('\n'),
    );
    this.name = 'CampaignFileError';
  }
}

/** Parses a campaign file (YAML or JSON, which is YAML) and validates it with the contract's schema. */
export function parseCampaignFile(text: string, file = 'campaign.yaml'): CampaignSpec {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0)
    throw new CampaignFileError(
      file,
      doc.errors.map((e) => ({
        path: '',
        line: lineCounter.linePos(e.pos[0]).line,
        message: e.message.split('\n')[0],
      })),
    );
  const parsed = CampaignSpecSchema.safeParse(doc.toJS());
  if (parsed.success) return parsed.data;
  throw new CampaignFileError(
    file,
    parsed.error.issues.map((issue) => ({
      path: issue.path.join('.'),
      line: lineOf(doc.contents, issue.path, lineCounter),
      message: issue.message,
    })),
  );
}

/** Line of the deepest node along `path` that exists in the document. */
function lineOf(root: unknown, path: PropertyKey[], lineCounter: LineCounter): number | null {
  let node = root as Node | null;
  let line: number | null = node?.range ? lineCounter.linePos(node.range[0]).line : null;
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === key);
      if (!pair) break;
      const keyNode = pair.key as Node;
      if (keyNode?.range) line = lineCounter.linePos(keyNode.range[0]).line;
      node = pair.value as Node | null;
    } else if (isSeq(node) && typeof key === 'number') {
      node = node.items[key] as Node | null;
      if (node?.range) line = lineCounter.linePos(node.range[0]).line;
    } else break;
  }
  return line;
}

/**
 * Reads the files a campaign names (dataset, replay trace) before any load starts, so a file that
 * does not parse refuses the campaign with the field, the file and the line, instead of failing a
 * shard later.
 */
export async function preflightCampaign(spec: CampaignSpec): Promise<void> {
  const issues: CampaignIssue[] = [];
  const check = async (path: string, load: () => Promise<unknown>) => {
    try {
      await load();
    } catch (error) {
      if (!(error instanceof DatasetParseError)) throw error;
      issues.push({ path, line: null, message: `${error.file}:${error.line}: ${error.reason}` });
    }
  };
  const scenario = spec.scenario;
  if (
    (scenario.type === 'chat' || scenario.type === 'embeddings' || scenario.type === 'rag') &&
    scenario.dataset
  ) {
    const dataset = scenario.dataset;
    await check('scenario.dataset', () => loadDataset(dataset));
  }
  const profile = spec.load.profile;
  if (profile?.type === 'replay')
    await check('load.profile.path', () => loadReplay(profile.path, profile.format));
  if (issues.length > 0) throw new CampaignFileError(spec.name, issues);
}
