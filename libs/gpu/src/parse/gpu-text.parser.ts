import {
  parsePrometheusText,
  PrometheusParseError,
  type PromFamily,
} from '../exposition/prometheus-text.parser';
import { GpuParseError } from '../model/gpu-parse.error';
import type { NormalisedSample } from '../model/gpu-sample.model';
import { adaptExposition, type ExpositionAdaptOptions } from '../sources/exposition.adapter';
import { parseNvidiaSmiCsv } from '../sources/nvidia-smi-csv.parser';
import { parseNvidiaSmiXml } from '../sources/nvidia-smi-xml.parser';
import { detectFormatDetailed, type GpuTextFormat } from './format.detector';

export type GpuTextFormatOption = GpuTextFormat | 'auto';

export interface ParsedGpuText {
  readonly format: GpuTextFormat;
  readonly samples: NormalisedSample[];
}

/**
 * Parses any supported GPU/inference-server text into normalised samples, telling the format
 * apart by content when `format` is `auto`. Throws `GpuParseError` (with the reason) when the
 * text is not the format asked for, or no format matches. A well-formed text with no metric
 * Fathom knows gives an empty list, not an error.
 */
export function parseGpuTextDetailed(
  text: string,
  format: GpuTextFormatOption = 'auto',
  options: ExpositionAdaptOptions = {},
): ParsedGpuText {
  let resolved: GpuTextFormat;
  let families: PromFamily[] | undefined;
  if (format === 'auto') {
    const detection = detectFormatDetailed(text);
    if (detection.format === 'unknown') throw new GpuParseError(`unrecognised format: ${detection.reason}`);
    resolved = detection.format;
    families = detection.families;
  } else {
    resolved = format;
  }
  switch (resolved) {
    case 'nvidia-smi-csv':
      return { format: resolved, samples: parseNvidiaSmiCsv(text) };
    case 'nvidia-smi-xml':
      return { format: resolved, samples: parseNvidiaSmiXml(text) };
    case 'dcgm':
    case 'prometheus': {
      if (!families) {
        try {
          families = parsePrometheusText(text);
        } catch (error) {
          if (error instanceof PrometheusParseError)
            throw new GpuParseError(`not Prometheus text: ${error.message}`);
          throw error;
        }
      }
      if (families.every((f) => f.samples.length === 0))
        throw new GpuParseError('Prometheus text has no samples');
      return { format: resolved, samples: adaptExposition(families, options) };
    }
  }
}

export function parseGpuText(
  text: string,
  format: GpuTextFormatOption = 'auto',
  options: ExpositionAdaptOptions = {},
): NormalisedSample[] {
  return parseGpuTextDetailed(text, format, options).samples;
}
