import { Body, Controller, Get, HttpCode, NotFoundException, Param, Post, UseGuards } from '@nestjs/common';
import { ApiTokenGuard } from '../api-token.guard';
import { ShadowService } from './shadow.service';
import { ShadowRepository } from '@fathom/storage';

@Controller('v1/shadow-campaigns')
export class ShadowController {
  constructor(
    private readonly service: ShadowService,
    private readonly shadows: ShadowRepository,
  ) {}

  /** Starts a shadow campaign; 201 with its id (status `running`), 400 naming bad fields. */
  @Post()
  @HttpCode(201)
  @UseGuards(ApiTokenGuard)
  async create(@Body() body: unknown) {
    const campaign = await this.service.start(body);
    return {
      id: campaign.id,
      status: campaign.status,
      links: { self: `/v1/shadow-campaigns/${campaign.id}` },
    };
  }

  /** The campaign, its status and, once done, the report per endpoint and intent. */
  @Get(':id')
  async get(@Param('id') id: string) {
    const campaign = await this.shadows.get(id);
    if (!campaign) throw new NotFoundException(`no shadow campaign ${id}`);
    return campaign;
  }

  /** The stored (redacted) requests and their observations. */
  @Get(':id/samples')
  async samples(@Param('id') id: string) {
    if (!(await this.shadows.get(id))) throw new NotFoundException(`no shadow campaign ${id}`);
    return this.shadows.samples(id);
  }
}
