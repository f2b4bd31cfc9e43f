import type { CampaignRepository } from '@fathom/storage';
import { FieldValidationError } from '@fathom/contracts';

/**
 * Refuses an input (an alert rule, a schedule) whose `campaignId` names no stored campaign: a
 * FieldValidationError naming the field, answered with 400. One check for every such input, so
 * they all refuse alike.
 */
export async function requireCampaign(
  campaigns: Pick<CampaignRepository, 'get'>,
  campaignId: string,
  what: string,
): Promise<void> {
  if (await campaigns.get(campaignId)) return;
  throw new FieldValidationError(what, [{ field: 'campaignId', message: `no campaign ${campaignId}` }]);
}
