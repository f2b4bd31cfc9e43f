// The campaign thresholds are judged by the load engine too (slo.abortOnFail): one definition.
export { sloObjectiveResults, sloVerdict, type RunFigures, type SloObjectiveResult } from '@fathom/load';
