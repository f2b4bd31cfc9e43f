import { Module } from '@nestjs/common';
import { RunAnalysisService } from './run-analysis.service';

/** SLO tiers, run summaries and reports. */
@Module({ providers: [RunAnalysisService] })
export class AnalyzerModule {}
