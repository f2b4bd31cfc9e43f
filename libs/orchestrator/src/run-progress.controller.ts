import { Controller, Get, NotFoundException, Param } from '@nestjs/common';
import { RunProgressService } from './run-progress.service';

/** `GET /v1/runs/:id/progress`: what `fathom run --api` polls while the run goes. */
@Controller('v1/runs')
export class RunProgressController {
  constructor(private readonly progress: RunProgressService) {}

  @Get(':id/progress')
  async get(@Param('id') id: string) {
    const progress = await this.progress.get(id);
    if (!progress) throw new NotFoundException(`no run ${id}`);
    return progress;
  }
}
