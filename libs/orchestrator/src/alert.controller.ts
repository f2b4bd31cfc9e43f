import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  NotFoundException,
  ConflictException,
  Param,
  Post,
  UseGuards,
} from '@nestjs/common';
import { CampaignRepository } from '@fathom/storage';
import { parseFields, AlertRuleInputSchema, AlertmanagerPayloadSchema } from '@fathom/contracts';
import { ApiTokenGuard } from './api-token.guard';
import { AlertWebhookGuard } from './alert-webhook.guard';
import { AlertRepository } from '@fathom/storage';
import { AlertService } from './alert.service';
import { requireCampaign } from './campaign-reference.util';

@Controller()
export class AlertController {
  constructor(
    private readonly service: AlertService,
    private readonly alerts: AlertRepository,
    private readonly campaigns: CampaignRepository,
  ) {}

  /** Alertmanager webhook receiver (payload version 4). */
  @Post('v1/hooks/alertmanager')
  @HttpCode(200)
  @UseGuards(AlertWebhookGuard)
  receive(@Body() body: unknown) {
    return this.service.handle(parseFields(AlertmanagerPayloadSchema, body, 'Alertmanager payload'));
  }

  @Post('v1/alert-rules')
  @HttpCode(201)
  @UseGuards(ApiTokenGuard)
  async createRule(@Body() body: unknown) {
    const rule = parseFields(AlertRuleInputSchema, body, 'alert rule');
    await requireCampaign(this.campaigns, rule.campaignId, 'alert rule');
    return this.alerts.createRule(rule);
  }

  @Get('v1/alert-rules')
  @UseGuards(ApiTokenGuard)
  listRules() {
    return this.alerts.listRules();
  }

  @Delete('v1/alert-rules/:id')
  @HttpCode(204)
  @UseGuards(ApiTokenGuard)
  async deleteRule(@Param('id') id: string): Promise<void> {
    const rules = await this.alerts.listRules();
    if (!rules.some((r) => r.id === id)) throw new NotFoundException(`no alert rule ${id}`);
    if (!(await this.alerts.deleteRule(id)))
      throw new ConflictException(`alert rule ${id} already started runs; it is kept`);
  }
}
