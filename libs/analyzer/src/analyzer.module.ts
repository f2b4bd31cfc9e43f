import { Module, type DynamicModule } from '@nestjs/common';
import { RunAnalysisService } from './run-analysis.service';
import { ANALYZER_SETTINGS, type AnalyzerSettings } from './analyzer.settings';

/** SLO tiers, run summaries and reports. */
@Module({})
export class AnalyzerModule {
  static register(settings: AnalyzerSettings): DynamicModule {
    return {
      module: AnalyzerModule,
      providers: [{ provide: ANALYZER_SETTINGS, useValue: settings }, RunAnalysisService],
    };
  }
}
