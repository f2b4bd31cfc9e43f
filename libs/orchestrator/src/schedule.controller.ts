import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  UseGuards,
} from '@nestjs/common';
import { CampaignRepository } from '@fathom/storage';
import { parseFields, ScheduleInputSchema } from '@fathom/contracts';
import { ApiTokenGuard } from './api-token.guard';
import { requireCampaign } from './campaign-reference.util';
import { ScheduleRepository } from '@fathom/storage';

@Controller('v1/schedules')
export class ScheduleController {
  constructor(
    private readonly schedules: ScheduleRepository,
    private readonly campaigns: CampaignRepository,
  ) {}

  @Post()
  @HttpCode(201)
  @UseGuards(ApiTokenGuard)
  async create(@Body() body: unknown) {
    const schedule = parseFields(ScheduleInputSchema, body, 'schedule');
    await requireCampaign(this.campaigns, schedule.campaignId, 'schedule');
    return this.schedules.create(schedule);
  }

  @Get()
  @UseGuards(ApiTokenGuard)
  list() {
    return this.schedules.list();
  }

  @Get(':id')
  @UseGuards(ApiTokenGuard)
  async get(@Param('id') id: string) {
    const schedule = await this.schedules.get(id);
    if (!schedule) throw new NotFoundException(`no schedule ${id}`);
    return schedule;
  }

  /** Disables the schedule (kept for its history); a run it started is not touched. */
  @Delete(':id')
  @HttpCode(204)
  @UseGuards(ApiTokenGuard)
  async disable(@Param('id') id: string): Promise<void> {
    if (!(await this.schedules.disable(id))) throw new NotFoundException(`no schedule ${id}`);
  }
}
