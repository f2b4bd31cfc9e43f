import type { CampaignSpec, FieldIssue, HttpScenario } from '@fathom/contracts';
import { confinedPath, FileAccessError, plainSecretFields, TargetAllowList } from '@fathom/load';

/**
 * What a campaign from a caller may reach, read once from the environment:
 * - FATHOM_DATA_FILES_DIR: the only directory dataset, replay and shadow source files are read
 *   from over the API (unset: none; data is uploaded inline);
 * - FATHOM_ALLOWED_TARGETS: see TargetAllowList.
 */
export interface AdmissionPolicy {
  readonly dataFilesDir: string | null;
  readonly allowList: TargetAllowList;
}

export const ADMISSION_POLICY = Symbol('ADMISSION_POLICY');

export function admissionPolicyOf(settings: {
  FATHOM_DATA_FILES_DIR?: string;
  FATHOM_ALLOWED_TARGETS?: string;
}): AdmissionPolicy {
  return {
    dataFilesDir: settings.FATHOM_DATA_FILES_DIR || null,
    allowList: TargetAllowList.parse(settings.FATHOM_ALLOWED_TARGETS),
  };
}

/** `localFiles`: the caller is the user on this machine (the CLI), who may name any of their files. */
export interface AdmissionAccess {
  readonly localFiles: boolean;
}

export const API_ACCESS: AdmissionAccess = { localFiles: false };

const NO_DATA_DIR =
  'files are not read from the server: give the data inline (dataset type "inline" or source type "inline"), or have the operator set FATHOM_DATA_FILES_DIR';

/** Issues with the credentials and URLs of a spec (campaign or shadow campaign). */
export async function reachIssues(
  spec: unknown,
  urls: ReadonlyArray<readonly [string, string | undefined]>,
  policy: AdmissionPolicy,
): Promise<FieldIssue[]> {
  const issues: FieldIssue[] = plainSecretFields(spec).map((field) => ({
    field,
    message:
      'give the secret by reference, { env: "FATHOM_SECRET_<NAME>" } or { file: "<name in FATHOM_SECRETS_DIR>" }: Fathom never stores or publishes its value',
  }));
  for (const [field, url] of urls) {
    if (url === undefined) continue;
    const credentials = urlCredentialIssue(url);
    if (credentials) {
      issues.push({ field, message: credentials });
      continue;
    }
    const refusal = await policy.allowList.refusal(url);
    if (refusal) issues.push({ field, message: `refused: ${refusal}` });
  }
  return issues;
}

/** Credentials inside a URL end up in logs and reasons: refused, with where they belong instead. */
export function urlCredentialIssue(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.username || parsed.password)
    return 'credentials inside a URL are refused: give them as apiKey (by reference)';
  for (const name of parsed.searchParams.keys()) {
    if (/(key|token|secret|password|passwd|auth|signature|sig$)/i.test(name))
      return `a credential in the query string (${name}) is refused: give it as apiKey or a header (by reference)`;
  }
  return null;
}

/** A data file a caller named, confined to the data directory (its real path), or an issue. */
export async function admitDataFile(
  field: string,
  path: string,
  policy: AdmissionPolicy,
  access: AdmissionAccess,
): Promise<{ path: string } | { issue: FieldIssue }> {
  if (access.localFiles) return { path };
  if (policy.dataFilesDir === null) return { issue: { field, message: NO_DATA_DIR } };
  try {
    return { path: await confinedPath(path, policy.dataFilesDir, field) };
  } catch (error) {
    if (error instanceof FileAccessError) return { issue: { field, message: error.message } };
    throw error;
  }
}

/**
 * Where the steps of a steps scenario connect apart from the target: a gRPC step's `address`
 * (as http:// or https:// for the allow-list) and a WebSocket step's absolute URL.
 */
function stepUrls(scenario: CampaignSpec['scenario']): Array<readonly [string, string]> {
  if (scenario.type !== 'http') return [];
  return scenario.steps.flatMap((step, i): Array<readonly [string, string]> => {
    if (step.kind === 'grpc' && step.address !== undefined)
      return [[`scenario.steps.${i}.address`, `${step.tls ? 'https' : 'http'}://${step.address}`]];
    if (step.kind === 'websocket' && !step.url.startsWith('/'))
      return [[`scenario.steps.${i}.url`, step.url.replace(/^ws/, 'http')]];
    return [];
  });
}

/**
 * Checks a parsed campaign against the policy: no credential given by value or inside a URL,
 * every URL inside the allow-list, every file inside the data directory (rewritten to its real
 * path, so a link swapped later cannot lead out). Returns the spec to store, or the issues.
 */
export async function admitCampaign(
  spec: CampaignSpec,
  policy: AdmissionPolicy,
  access: AdmissionAccess,
): Promise<{ spec: CampaignSpec } | { issues: FieldIssue[] }> {
  const scenario = spec.scenario;
  const urls: Array<readonly [string, string | undefined]> = [
    ['target.baseUrl', spec.target.baseUrl],
    ...spec.target.metricsUrls.map((url, i) => [`target.metricsUrls.${i}`, url] as const),
    ['scenario.qdrant.url', scenario.type === 'rag' ? scenario.qdrant?.url : undefined],
    ...stepUrls(scenario),
  ];
  const issues = await reachIssues(spec, urls, policy);
  let admitted = spec;
  const file = async (field: string, path: string, apply: (real: string) => CampaignSpec) => {
    const result = await admitDataFile(field, path, policy, access);
    if ('issue' in result) issues.push(result.issue);
    else admitted = apply(result.path);
  };
  const dataset = 'dataset' in scenario ? scenario.dataset : undefined;
  // Every dataset read from a file (jsonl, csv, sharegpt, and any later one with a path).
  if (dataset && 'path' in dataset) {
    await file('scenario.dataset.path', dataset.path, (path) => ({
      ...admitted,
      scenario: { ...admitted.scenario, dataset: { ...dataset, path } } as CampaignSpec['scenario'],
    }));
  }
  const tokenizer = 'tokenizer' in scenario ? scenario.tokenizer : undefined;
  if (tokenizer !== undefined && typeof tokenizer === 'object') {
    await file('scenario.tokenizer.path', tokenizer.path, (path) => ({
      ...admitted,
      scenario: { ...admitted.scenario, tokenizer: { path } } as CampaignSpec['scenario'],
    }));
  }
  if (scenario.type === 'http')
    for (const [i, step] of scenario.steps.entries()) {
      if (step.kind !== 'grpc' || !('path' in step.proto)) continue;
      await file(`scenario.steps.${i}.proto.path`, step.proto.path, (path) => {
        const current = admitted.scenario as HttpScenario;
        const steps = current.steps.map((s, j) => (j === i ? { ...s, proto: { path } } : s));
        return { ...admitted, scenario: { ...current, steps } };
      });
    }
  const profile = spec.load.profile;
  if (profile?.type === 'replay') {
    await file('load.profile.path', profile.path, (path) => ({
      ...admitted,
      load: { ...admitted.load, profile: { ...profile, path } },
    }));
  }
  const classifier = spec.semantic?.baseline?.classifier;
  if (classifier) {
    await file('semantic.baseline.classifier.path', classifier.path, (path) => ({
      ...admitted,
      semantic: {
        ...admitted.semantic!,
        baseline: { ...admitted.semantic!.baseline!, classifier: { ...classifier, path } },
      },
    }));
  }
  return issues.length > 0 ? { issues } : { spec: admitted };
}
