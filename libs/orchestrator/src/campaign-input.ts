import { CampaignSpecSchema, MAX_INPUT_DEPTH, nestsDeeperThan, type CampaignSpec } from '@fathom/contracts';
import { FieldValidationError, parseFields } from './http/field-validation';

export type { FieldIssue } from './http/field-validation';

/** A campaign that cannot run as written; every issue names its field. */
export class CampaignValidationError extends FieldValidationError {}

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
