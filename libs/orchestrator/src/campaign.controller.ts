import { Body, Controller, Get, HttpCode, NotFoundException, Param, Post, UseGuards } from '@nestjs/common';
import { CampaignRepository, RunRepository } from '@fathom/storage';
import { CampaignService, type StartedRun } from './campaign.service';
import { ApiTokenGuard } from './api-token.guard';

/** Runs a campaign's own page lists, newest first; `links.moreRuns` pages through the rest. */
export const CAMPAIGN_RUNS_SHOWN = 100;

@Controller('v1/campaigns')
export class CampaignController {
  constructor(
    private readonly service: CampaignService,
    private readonly campaigns: CampaignRepository,
    private readonly runs: RunRepository,
  ) {}

  /** Starts a campaign: 201 with the ids, or 400 naming every bad field. */
  @Post()
  @HttpCode(201)
  @UseGuards(ApiTokenGuard)
  async create(@Body() body: unknown): Promise<StartedRun & { links: { run: string } }> {
    const started = await this.service.submit(body, 'api');
    return { ...started, links: { run: `/v1/runs/${started.runId}` } };
  }

  /**
   * The campaign with its newest `CAMPAIGN_RUNS_SHOWN` runs (a campaign scheduled every few
   * minutes gathers hundreds of thousands); `links.runs` lists them all page by page, and
   * `links.moreRuns`, present when older runs were left out, is the page that follows these.
   */
  @Get(':id')
  @UseGuards(ApiTokenGuard)
  async get(@Param('id') id: string) {
    const campaign = await this.campaigns.get(id);
    if (!campaign) throw new NotFoundException(`no campaign ${id}`);
    const runs = await this.runs.list({ campaignId: id, limit: CAMPAIGN_RUNS_SHOWN + 1 });
    const shown = runs.slice(0, CAMPAIGN_RUNS_SHOWN);
    const query = (extra: Record<string, string> = {}) =>
      new URLSearchParams({ campaignId: id, ...extra }).toString();
    return {
      ...campaign,
      runs: shown.map((r) => ({ id: r.id, status: r.status, trigger: r.trigger })),
      links: {
        runs: `/v1/runs?${query()}`,
        ...(runs.length > CAMPAIGN_RUNS_SHOWN
          ? {
              moreRuns: `/v1/runs?${query({ limit: String(CAMPAIGN_RUNS_SHOWN), cursor: shown[shown.length - 1].id })}`,
            }
          : {}),
      },
    };
  }
}
