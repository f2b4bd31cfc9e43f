import { FieldValidationError } from '@fathom/contracts';
import { requireCampaign } from './campaign-reference.util';

describe(requireCampaign.name, () => {
  const stored = { get: async (id: string) => (id === 'known' ? ({ id } as never) : null) };

  it('passes an input whose campaign is stored', async () => {
    await expect(requireCampaign(stored, 'known', 'schedule')).resolves.toBeUndefined();
  });

  it('refuses an unknown campaign with the campaignId field named and the input kind in the message', async () => {
    const refused = requireCampaign(stored, 'c-404', 'alert rule');
    await expect(refused).rejects.toBeInstanceOf(FieldValidationError);
    await expect(refused).rejects.toMatchObject({
      message: 'invalid alert rule: campaignId: no campaign c-404',
      issues: [{ field: 'campaignId', message: 'no campaign c-404' }],
    });
  });
});
