import { fuzzParser, textFrom } from '@fathom/testing';
import { GpuParseError } from '../model/gpu-parse.error';
import { readGpuFixture } from '../testing/fixture.util';
import { parseNvidiaSmiXml } from './nvidia-smi-xml.parser';
import { parseNvidiaSmiCsv } from './nvidia-smi-csv.parser';
import { scrapeSource, type FetchLike } from '../scrape/scrape-source';

const refusal = (error: unknown) => error instanceof GpuParseError;

/** What an nvidia-smi XML endpoint could send that broke the parser (issue 14's fuzz run). */
const HOSTILE_XML: Record<string, string> = {
  'two DOCTYPEs': '<!DOCTYPE a><!DOCTYPE b><nvidia_smi_log><gpu></gpu></nvidia_smi_log>',
  'an unclosed processing instruction after the root': '<nvidia_smi_log><gpu></gpu></nvidia_smi_log><?xml ',
  'an unclosed DOCTYPE': '<!DOCTYPE nvidia_smi_log [ <!ENTITY a "b">',
  '20,000 nested tags': `<nvidia_smi_log>${'<a>'.repeat(20_000)}${'</a>'.repeat(20_000)}</nvidia_smi_log>`,
  'an external entity':
    '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><nvidia_smi_log><gpu><uuid>&e;</uuid></gpu></nvidia_smi_log>',
};

describe('nvidia-smi parsers against hostile input', () => {
  it.each(Object.entries(HOSTILE_XML))('refuses XML with %s as a GpuParseError', (_name, text) => {
    expect(() => parseNvidiaSmiXml(text)).toThrow(GpuParseError);
  });

  it('classifies hostile XML from a metrics URL as a garbage scrape, not a throw', async () => {
    for (const text of Object.values(HOSTILE_XML)) {
      const fetchImpl: FetchLike = async () => ({ ok: true, status: 200, body: new Response(text).body });
      const result = await scrapeSource(
        { url: 'http://127.0.0.1:9/metrics', format: 'nvidia-smi-xml', timeoutMs: 1000 },
        fetchImpl,
      );
      expect(result).toMatchObject({ health: 'garbage', samples: [] });
    }
  });

  it('classifies whatever a parser throws as garbage', async () => {
    const fetchImpl: FetchLike = async () => ({
      ok: true,
      status: 200,
      body: new Response(HOSTILE_XML['20,000 nested tags']).body,
    });
    const result = await scrapeSource(
      { url: 'http://127.0.0.1:9/metrics', format: 'auto', timeoutMs: 1000 },
      fetchImpl,
    );
    expect(result.health).toBe('garbage');
  });

  it('XML: 10,000 seeded cases return samples or a GpuParseError, none slow', () => {
    const seeds = [
      readGpuFixture('nvidia-smi/h200-q-x-load.xml'),
      readGpuFixture('nvidia-smi/telegraf__nvidia_smi__testdata__a10g.xml'),
    ];
    const fragments = [
      '<nvidia_smi_log>',
      '</nvidia_smi_log>',
      '<gpu id="1">',
      '</gpu>',
      '<uuid>',
      '</uuid>',
      '<utilization>',
      '<gpu_util>',
      '</gpu_util>',
      '50 %',
      'N/A',
      '<fb_memory_usage>',
      '<used>',
      '</used>',
      '1024 MiB',
      '<?xml version="1.0"?>',
      '<?x ',
      '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
      '<!DOCTYPE a [',
      ']>',
      '<!ENTITY e "x">',
      '<!ENTITY e SYSTEM "file:///etc/passwd">',
      '&e;',
      '&amp;',
      '&#x41;',
      '&#9999999999;',
      '<![CDATA[',
      ']]>',
      '<!--',
      '-->',
      '<a>',
      '</a>',
      '<',
      '>',
      '/>',
      '"',
      "'",
      '=',
      ' ',
      '\n',
      '<mig_devices>',
      '<mig_device>',
      '<gpu_instance_id>',
    ];
    const report = fuzzParser(textFrom(fragments, seeds), parseNvidiaSmiXml, {
      seed: 1414,
      refusal,
      check: (input, output) => expect((output as unknown[]).length).toBeLessThanOrEqual(input.length),
    });
    expect(report.cases).toBe(10_000);
    expect(report.heapGrowthMib).toBeLessThan(256);
  });

  it('CSV: 10,000 seeded cases return samples or a GpuParseError, none slow', () => {
    const seeds = [
      readGpuFixture('nvidia-smi/h200-query-gpu-load.csv'),
      readGpuFixture('nvidia-smi/h100-query-gpu-full-load.csv').slice(0, 3000),
    ];
    const fragments = [
      'timestamp',
      'index',
      'uuid',
      'utilization.gpu [%]',
      'memory.used [MiB]',
      'memory.total [MiB]',
      'power.draw [W]',
      ', ',
      ',',
      '\n',
      '\r\n',
      '"',
      '[N/A]',
      'N/A',
      '100 %',
      '42099 MiB',
      '1e309',
      '-1',
      'NaN',
      ' W',
      'GPU-67e6',
      '[Not Supported]',
    ];
    const report = fuzzParser(textFrom(fragments, seeds), parseNvidiaSmiCsv, {
      seed: 1415,
      refusal,
      check: (input, output) => expect((output as unknown[]).length).toBeLessThanOrEqual(input.length),
    });
    expect(report.cases).toBe(10_000);
    expect(report.heapGrowthMib).toBeLessThan(256);
  });
});
