import {
  Controller,
  Get,
  Header,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  Query,
  Res,
  UseGuards,
} from '@nestjs/common';
import { FieldValidationError } from '@fathom/contracts';

/** GET /v1/runs page sizes: 100 runs with summaries are ~150 KB. */
const RUN_PAGE_DEFAULT = 100;
const RUN_PAGE_MAX = 500;
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

  /**
   * Runs, newest first, one page at a time: `limit` (1-500, default 100) runs, and when more
   * follow, the next page's `cursor` in `X-Next-Cursor` and a `Link: <...>; rel="next"` header.
   * The body stays a plain array, so a client that ignores paging keeps working (on page one).
   */
  @Get()
  @UseGuards(ApiTokenGuard)
  async list(
    @Res({ passthrough: true }) response: { setHeader(name: string, value: string): void },
    @Query('campaignId') campaignId?: string,
    @Query('status') status?: RunStatus,
    @Query('limit') limitText?: string,
    @Query('cursor') cursor?: string,
  ) {
    const limit = limitText === undefined ? RUN_PAGE_DEFAULT : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > RUN_PAGE_MAX)
      throw new FieldValidationError('query', [
        { field: 'limit', message: `an integer from 1 to ${RUN_PAGE_MAX}` },
      ]);
    if (cursor !== undefined && !(await this.runs.get(cursor)))
      throw new FieldValidationError('query', [{ field: 'cursor', message: 'not a cursor this API gave' }]);
    const page = await this.runs.list({ campaignId, status, limit: limit + 1, after: cursor });
    if (page.length > limit) {
      const next = page[limit - 1].id;
      const query = new URLSearchParams({
        ...(campaignId === undefined ? {} : { campaignId }),
        ...(status === undefined ? {} : { status }),
        limit: String(limit),
        cursor: next,
      });
      response.setHeader('X-Next-Cursor', next);
      response.setHeader('Link', `</v1/runs?${query.toString()}>; rel="next"`);
    }
    return page.slice(0, limit);
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
