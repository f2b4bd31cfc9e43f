import { CampaignSpecSchema, type CampaignSpec } from '@fathom/contracts';

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `load.concurrency`; `(root)` for the body itself. */
  field: string;
  message: string;
}

/** A campaign that cannot run as written; every issue names its field. */
export class CampaignValidationError extends Error {
  constructor(readonly issues: FieldIssue[]) {
    super(`invalid campaign: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`);
  }
}

export function parseCampaign(input: unknown): CampaignSpec {
  const parsed = CampaignSpecSchema.safeParse(input);
  if (!parsed.success) {
    throw new CampaignValidationError(
      parsed.error.issues.map((issue) => {
        const path = issue.path.map(String);
        // zod reports unknown keys on the parent object: name the keys themselves.
        if (issue.code === 'unrecognized_keys') {
          const keys = issue.keys.map((k) => [...path, k].join('.'));
          return { field: keys.join(', '), message: `unknown field${keys.length > 1 ? 's' : ''}` };
        }
        return { field: path.length ? path.join('.') : '(root)', message: issue.message };
      }),
    );
  }
  return parsed.data;
}
