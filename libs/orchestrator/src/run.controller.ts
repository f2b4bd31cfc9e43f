import {
  Controller,
  Get,
  Header,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  Query,
  UseGuards,
} from '@nestjs/common';
import { RunReportRepository, RunRepository } from '@fathom/storage';
import { loadReportAssets, renderReportHtml, type RunReportDocument } from '@fathom/analysis';
import type { RunStatus } from '@fathom/contracts';
import { CampaignService } from './campaign.service';
import { ApiTokenGuard } from './api-token.guard';

@Controller('v1/runs')
export class RunController {
  constructor(
    private readonly runs: RunRepository,
    private readonly reports: RunReportRepository,
    private readonly campaigns: CampaignService,
  ) {}

  @Get()
  @UseGuards(ApiTokenGuard)
  list(@Query('campaignId') campaignId?: string, @Query('status') status?: RunStatus) {
    return this.runs.list({ campaignId, status });
  }

  /** The run, its state and, once the analyzer reported, its summary. */
  @Get(':id')
  @UseGuards(ApiTokenGuard)
  async get(@Param('id') id: string) {
    const run = await this.runs.get(id);
    if (!run) throw new NotFoundException(`no run ${id}`);
    return run;
  }

  @Get(':id/report')
  @UseGuards(ApiTokenGuard)
  async report(@Param('id') id: string) {
    const report = await this.reports.latest(id);
    if (!report) throw new NotFoundException(`no report for run ${id} yet`);
    return report;
  }

  /** The latest report as one self-contained HTML page (charts and data inlined). */
  @Get(':id/report.html')
  @Header('content-type', 'text/html; charset=utf-8')
  async reportHtml(@Param('id') id: string): Promise<string> {
    const report = await this.reports.latest(id);
    if (!report) throw new NotFoundException(`no report for run ${id} yet`);
    return renderReportHtml(report.document as unknown as RunReportDocument, loadReportAssets());
  }

  @Post(':id/abort')
  @HttpCode(202)
  @UseGuards(ApiTokenGuard)
  async abort(@Param('id') id: string) {
    const run = await this.runs.get(id);
    if (!run) throw new NotFoundException(`no run ${id}`);
    const aborted = await this.campaigns.abort(id, 'aborted by request');
    return { id, aborted, status: aborted ? 'aborted' : run.status };
  }
}
