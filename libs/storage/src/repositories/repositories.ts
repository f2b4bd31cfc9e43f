import type { Queryable } from '../database/database';
import { BaselineRepository } from './baseline.repository';
import { CampaignRepository } from './campaign.repository';
import { RunEventRepository } from './run-event.repository';
import { RunReportRepository } from './run-report.repository';
import { RunRepository } from './run.repository';

export type StorageRepositories = {
  campaigns: CampaignRepository;
  runs: RunRepository;
  runEvents: RunEventRepository;
  runReports: RunReportRepository;
  baselines: BaselineRepository;
};

/** Every repository over `db`: a `Database`, or the `tx` of a transaction to share it. */
export function createRepositories(db: Queryable): StorageRepositories {
  return {
    campaigns: new CampaignRepository(db),
    runs: new RunRepository(db),
    runEvents: new RunEventRepository(db),
    runReports: new RunReportRepository(db),
    baselines: new BaselineRepository(db),
  };
}
