import {
  BadRequestException,
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
import type { z } from 'zod';
import { ApiTokenGuard } from './api-token.guard';
import { AlertWebhookGuard } from './alert-webhook.guard';
import { AlertRepository } from './alert.repository';
import { AlertService } from './alert.service';
import { AlertRuleInputSchema, AlertmanagerPayloadSchema } from './alertmanager-payload';

function parseOr400<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new BadRequestException({
      statusCode: 400,
      message: 'invalid body',
      issues: parsed.error.issues.map((i) => ({ field: i.path.join('.') || '(root)', message: i.message })),
    });
  }
  return parsed.data;
}

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
    return this.service.handle(parseOr400(AlertmanagerPayloadSchema, body));
  }

  @Post('v1/alert-rules')
  @HttpCode(201)
  @UseGuards(ApiTokenGuard)
  async createRule(@Body() body: unknown) {
    const rule = parseOr400(AlertRuleInputSchema, body);
    if (!(await this.campaigns.get(rule.campaignId))) {
      throw new BadRequestException({
        statusCode: 400,
        message: `no campaign ${rule.campaignId}`,
        issues: [{ field: 'campaignId', message: 'no such campaign' }],
      });
    }
    return this.alerts.createRule(rule);
  }

  @Get('v1/alert-rules')
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
