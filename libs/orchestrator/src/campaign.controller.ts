import { Body, Controller, Get, HttpCode, NotFoundException, Param, Post, UseGuards } from '@nestjs/common';
import { CampaignRepository, RunRepository } from '@fathom/storage';
import { CampaignService, type StartedRun } from './campaign.service';
import { ApiTokenGuard } from './api-token.guard';

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

  @Get(':id')
  @UseGuards(ApiTokenGuard)
  async get(@Param('id') id: string) {
    const campaign = await this.campaigns.get(id);
    if (!campaign) throw new NotFoundException(`no campaign ${id}`);
    const runs = await this.runs.list({ campaignId: id });
    return { ...campaign, runs: runs.map((r) => ({ id: r.id, status: r.status, trigger: r.trigger })) };
  }
}
