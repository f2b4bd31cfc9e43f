// @fathom/gpu: exposition parsers, the normalised GPU/inference-server sample model, derived
// signals, scraping and edge sampling. Plain TypeScript (type:domain).

// Prometheus text format
export * from './exposition/prometheus-text.parser';
export {
  renderPrometheusText,
  formatPromFloat,
  escapeLabelValue,
} from './exposition/prometheus-text.renderer';
export * from './exposition/histogram.util';

// Model
export * from './model/gpu-sample.model';
export { GpuParseError } from './model/gpu-parse.error';
export { isDcgmSentinel, parseReading, type Reading } from './model/reading.util';

// Sources and parsing
export {
  adaptExposition,
  expositionSources,
  type ExpositionAdaptOptions,
} from './sources/exposition.adapter';
export { DCGM_FIELD_MAP, DCGM_FIELDS_NOT_NORMALISED } from './sources/dcgm.adapter';
export { parseNvidiaSmiCsv, NVIDIA_SMI_QUERY_FIELDS } from './sources/nvidia-smi-csv.parser';
export { parseNvidiaSmiXml } from './sources/nvidia-smi-xml.parser';
export * from './parse/format.detector';
export * from './parse/gpu-text.parser';

// Derived signals
export * from './signals/counter-rate.util';
export * from './signals/prefix-cache-hit-rate.tracker';
export * from './signals/windowed-variance';
export * from './signals/bandwidth-saturation';
export * from './signals/dram-saturation.watch';
export * from './signals/sm-heat-map';
export * from './signals/run-derivations';

// Scraping
export * from './scrape/scrape-source';
export * from './scrape/scrape-backoff';
export * from './scrape/nvidia-smi.runner';

// Edge sampling
export * from './edge/host-resource.reader';
export * from './edge/edge-sampling.governor';

// Joined with the load
export * from './join/readings-during.util';
