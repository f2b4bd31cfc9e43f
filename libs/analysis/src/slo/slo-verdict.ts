// The campaign thresholds are judged by the load engine too (slo.abortOnFail): one definition.
export { sloVerdict, type RunFigures } from '@fathom/load';
