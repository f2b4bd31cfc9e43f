import { fuzzParser, textFrom } from '@fathom/testing';
import { readGpuFixture } from '../testing/fixture.util';
import { parsePrometheusText, PrometheusParseError } from './prometheus-text.parser';
import { parseGpuText } from '../parse/gpu-text.parser';
import { GpuParseError } from '../model/gpu-parse.error';

/** What a metrics URL sends (vLLM, DCGM, anything): a parse or a classified refusal, never a throw. */
describe('Prometheus text parsing against hostile input', () => {
  const fragments = [
    '# HELP ',
    '# TYPE ',
    'vllm:num_requests_running',
    'DCGM_FI_DEV_GPU_UTIL',
    ' gauge',
    ' counter',
    ' histogram',
    ' summary',
    '{',
    '}',
    '="',
    '"',
    ',',
    'gpu="0"',
    'le="+Inf"',
    '_bucket',
    '_sum',
    '_count',
    ' 1',
    ' NaN',
    ' +Inf',
    ' -Inf',
    ' 1e309',
    ' 0x1p3',
    ' 1712345678000',
    '\n',
    '\r\n',
    '\\',
    '\\n',
    '\\"',
    '# EOF',
    ' ',
    'é',
    '\u0000',
  ];
  const seeds = [
    readGpuFixture('vllm/vllm-v0-legacy-metrics-sample__aibrix-runtime-docs.prom').slice(0, 4000),
  ];

  it('parsePrometheusText and parseGpuText: 10,000 seeded cases', () => {
    const report = fuzzParser(
      textFrom(fragments, seeds),
      (text) => {
        let families = 0;
        try {
          families = parsePrometheusText(text).length;
        } catch (error) {
          if (!(error instanceof PrometheusParseError)) throw error;
        }
        return families + parseGpuText(text).length;
      },
      {
        seed: 1403,
        refusal: (error) => error instanceof GpuParseError,
        check: (input, output) => expect(output as number).toBeLessThanOrEqual(input.length * 2),
      },
    );
    expect(report.cases).toBe(10_000);
    expect(report.heapGrowthMib).toBeLessThan(256);
  });
});
