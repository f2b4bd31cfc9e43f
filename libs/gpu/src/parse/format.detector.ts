import {
  parsePrometheusText,
  PrometheusParseError,
  type PromFamily,
} from '../exposition/prometheus-text.parser';
import { expositionSources } from '../sources/exposition.adapter';
import { isNvidiaSmiCsvHeader } from '../sources/nvidia-smi-csv.parser';

export const GPU_TEXT_FORMATS = ['dcgm', 'prometheus', 'nvidia-smi-csv', 'nvidia-smi-xml'] as const;
export type GpuTextFormat = (typeof GPU_TEXT_FORMATS)[number];

export interface FormatDetection {
  readonly format: GpuTextFormat | 'unknown';
  /** Why: what was seen, or why nothing matched. */
  readonly reason: string;
  /** The parsed exposition, when the text was one (saves parsing twice). */
  readonly families?: PromFamily[];
}

/**
 * Tells the formats apart by content, not by file name:
 * - XML with an `<nvidia_smi_log>` root -> nvidia-smi-xml;
 * - a line that is a query-gpu CSV header (known nvidia-smi field names, comma-separated) ->
 *   nvidia-smi-csv (also finds the CSV sections inside a capture bundle);
 * - a well-formed Prometheus/OpenMetrics exposition with at least one sample -> dcgm when it
 *   carries DCGM field names (`DCGM_FI_*`, legacy `dcgm_*`), else prometheus (vLLM, TGI, Triton,
 *   anything else).
 */
export function detectFormatDetailed(input: string): FormatDetection {
  const text = input.replace(/^\uFEFF/, '');
  const head = text.trimStart();
  if (head === '') return { format: 'unknown', reason: 'the text is empty' };
  if (head.startsWith('<')) {
    return /<nvidia_smi_log[\s>]/.test(text)
      ? { format: 'nvidia-smi-xml', reason: 'XML with an <nvidia_smi_log> root' }
      : { format: 'unknown', reason: 'markup (XML/HTML) without an <nvidia_smi_log> root' };
  }
  if (head.startsWith('{') || head.startsWith('[')) {
    return { format: 'unknown', reason: 'looks like JSON, which is not a metrics format Fathom reads' };
  }
  const lines = text.split(/\r?\n/);
  const firstContent = lines.findIndex((l) => l.trim() !== '');
  if (lines.some((line, i) => isNvidiaSmiCsvHeader(line.trim(), i === firstContent ? 1 : 2))) {
    return { format: 'nvidia-smi-csv', reason: 'an nvidia-smi --query-gpu CSV header' };
  }
  try {
    const families = parsePrometheusText(text);
    const sampleCount = families.reduce((n, f) => n + f.samples.length, 0);
    if (sampleCount === 0)
      return { format: 'unknown', reason: 'no samples: comments or HELP/TYPE lines only' };
    const sources = expositionSources(families);
    return sources.has('dcgm')
      ? { format: 'dcgm', reason: 'Prometheus exposition with DCGM field names', families }
      : {
          format: 'prometheus',
          reason: `Prometheus exposition${sources.size ? ` (${[...sources].join(', ')})` : ''}`,
          families,
        };
  } catch (error) {
    if (error instanceof PrometheusParseError) {
      return {
        format: 'unknown',
        reason: `not XML, not nvidia-smi CSV, and not Prometheus text (${error.message})`,
      };
    }
    throw error;
  }
}

export function detectFormat(text: string): GpuTextFormat | 'unknown' {
  return detectFormatDetailed(text).format;
}
