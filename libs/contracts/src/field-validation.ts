import type { z } from 'zod';
import { CampaignSpecSchema, type CampaignSpec } from './campaign/campaign.schema';
import { MAX_INPUT_DEPTH, nestsDeeperThan } from './json-depth.util';

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `load.concurrency`; `(root)` for the body itself. */
  field: string;
  message: string;
}

/**
 * Input that cannot be used as written; every issue names its field. Thrown by services and
 * parsers, answered with a 400 `{statusCode, message, issues}` by `FieldValidationFilter`.
 */
export class FieldValidationError extends Error {
  constructor(
    what: string,
    readonly issues: FieldIssue[],
  ) {
    super(`invalid ${what}: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`);
  }
}

/** zod issues as field issues; unknown keys are named one by one (zod reports them on the parent). */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => ({ field: [...path, k].join('.'), message: 'unknown field' }));
    }
    return [{ field: path.length ? path.join('.') : '(root)', message: issue.message }];
  });
}

/** Parses `input` or throws a FieldValidationError naming each bad field. */
export function parseFields<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new FieldValidationError(what, fieldIssues(parsed.error));
  return parsed.data;
}

/** A campaign that cannot run as written; every issue names its field. */
export class CampaignValidationError extends FieldValidationError {}

/**
 * A campaign as the API, the CLI and the scheduler take it: validated, every bad field named
 * (`CampaignValidationError`). Here, not in the orchestrator, so `fathom validate` checks a file
 * without loading the services.
 */
export function parseCampaign(input: unknown): CampaignSpec {
  if (nestsDeeperThan(input))
    throw new CampaignValidationError('campaign', [
      { field: '(root)', message: `nested deeper than ${MAX_INPUT_DEPTH} levels` },
    ]);
  try {
    return parseFields(CampaignSpecSchema, input, 'campaign');
  } catch (error) {
    if (error instanceof FieldValidationError) throw new CampaignValidationError('campaign', error.issues);
    throw error;
  }
}
