import {
  BadRequestException,
  Body,
  ConflictException,
  Controller,
  Get,
  Headers,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  Query,
  Res,
  UseGuards,
} from '@nestjs/common';
import { renderShadowReportHtml } from '@fathom/analysis';
import { MirrorBatchSchema } from '@fathom/contracts';
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
  @UseGuards(ApiTokenGuard)
  async get(@Param('id') id: string) {
    const campaign = await this.shadows.get(id);
    if (!campaign) throw new NotFoundException(`no shadow campaign ${id}`);
    return campaign;
  }

  /** The stored (redacted) requests and their observations. */
  @Get(':id/samples')
  @UseGuards(ApiTokenGuard)
  async samples(@Param('id') id: string) {
    if (!(await this.shadows.get(id))) throw new NotFoundException(`no shadow campaign ${id}`);
    return this.shadows.samples(id);
  }

  /**
   * The report of a campaign over time: for a live campaign its caps, breaker, tier and rolling
   * windows (per window and per hour); otherwise the final report once done. `format=html`: the
   * same as one self-contained HTML page (charts of every metric against the noise floor).
   */
  @Get(':id/report')
  async report(
    @Param('id') id: string,
    @Query('format') format: string | undefined,
    @Res({ passthrough: true }) res: { header(name: string, value: string): unknown },
  ) {
    if (format !== undefined && format !== 'json' && format !== 'html')
      throw new BadRequestException(
        `format must be json or html, not ${JSON.stringify(format).slice(0, 40)}`,
      );
    const campaign = await this.shadows.get(id);
    if (!campaign) throw new NotFoundException(`no shadow campaign ${id}`);
    if (format === 'html') {
      res.header('content-type', 'text/html; charset=utf-8');
      return renderShadowReportHtml({
        ...campaign,
        targets: {
          primary: campaign.config.primary.baseUrl,
          secondary: campaign.config.secondary.baseUrl,
          candidate: campaign.config.candidate.baseUrl,
        },
      });
    }
    return { id, status: campaign.status, reason: campaign.reason, report: campaign.report };
  }

  /**
   * Kill switch of a live campaign: run by this orchestrator, mirroring stops (no replay starts)
   * before this answers; run by another replica, that one's runner stops on the stop's announcement.
   */
  @Post(':id/stop')
  @HttpCode(200)
  @UseGuards(ApiTokenGuard)
  async stop(@Param('id') id: string) {
    const outcome = await this.service.stop(id);
    if (outcome === null) throw new NotFoundException(`no running live shadow campaign ${id}`);
    if (outcome === 'not-live')
      throw new ConflictException(`shadow campaign ${id} is not live: it ends by itself`);
    return { id, status: 'completed', reason: 'stopped' };
  }

  /**
   * Mirror receiver: a copy of a production chat request, as a front proxy's mirror (NGINX
   * `mirror`, Envoy `request_mirror_policies`) or `fathom shadow gateway` sends it. Answers 202
   * at once (the copy is replayed later, if the campaign's caps allow); the caller's answer never
   * depends on it. `x-fathom-intent` labels the request's intent.
   */
  @Post(':id/mirror')
  @HttpCode(202)
  @UseGuards(ApiTokenGuard)
  mirror(@Param('id') id: string, @Body() body: unknown, @Headers('x-fathom-intent') intent?: string) {
    const outcome = this.service.offer(id, body, intent || undefined);
    if (outcome === 'not-live') throw new NotFoundException(`no running live shadow campaign ${id}`);
    if (outcome === 'invalid') throw new BadRequestException('not an OpenAI chat completion request');
    return { accepted: true };
  }

  /**
   * Mirror receiver for several copies at once (`{"copies": [{"body": {...}, "intent": "..."}]}`,
   * at most MIRROR_BATCH_MAX_COPIES): each copy as `:id/mirror` takes it, one HTTP request for
   * all (the gateway's copy thread sends a slice's copies so). 202 with how many were accepted
   * and how many were not chat completion requests; 400 when the envelope itself is wrong.
   */
  @Post(':id/mirror/batch')
  @HttpCode(202)
  @UseGuards(ApiTokenGuard)
  mirrorBatch(@Param('id') id: string, @Body() body: unknown) {
    const batch = MirrorBatchSchema.safeParse(body);
    if (!batch.success)
      throw new BadRequestException(
        `not a mirror batch: ${batch.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`,
      );
    const outcome = this.service.offerBatch(id, batch.data.copies);
    if (outcome === 'not-live') throw new NotFoundException(`no running live shadow campaign ${id}`);
    return outcome;
  }
}
