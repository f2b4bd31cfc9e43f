import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { CliExit } from '../cli-exit';
import { registerProbeCommand } from './probe.command';

const FIXTURES = join(__dirname, '..', '..', '..', '..', 'libs', 'semantic', 'src', '__fixtures__');

async function run(file: string): Promise<{ stdout: string; stderr: string }> {
  const program = new Command('fathom').exitOverride();
  registerProbeCommand(program);
  let stdout = '';
  let stderr = '';
  const out = jest
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk) => ((stdout += String(chunk)), true));
  const err = jest
    .spyOn(process.stderr, 'write')
    .mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    await program.parseAsync(['node', 'fathom', 'probe', 'parse-sse', file]);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return { stdout, stderr };
}

function tempFile(content: string | Uint8Array): string {
  const path = join(mkdtempSync(join(tmpdir(), 'fathom-probe-')), 'body.sse');
  writeFileSync(path, content);
  return path;
}

describe('probe parse-sse', () => {
  it('prints one JSON object with the tool call, usage and token count of a recorded stream', async () => {
    const { stdout } = await run(join(FIXTURES, 'openai-python__inline-snapshot__c6aa7e397b71.sse'));
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(stdout)).toEqual({
      content: '',
      tokens: 0,
      toolCalls: [
        {
          index: 0,
          id: 'call_c91SqDXlYFuETYv8mUHzz6pp',
          name: 'GetWeatherArgs',
          arguments: '{"city":"Edinburgh","country":"UK","units":"c"}',
        },
      ],
      finishReason: 'tool_calls',
      usage: { promptTokens: 76, completionTokens: 24, totalTokens: 100, cachedTokens: null },
    });
  });

  it('counts logprob entries as tokens', async () => {
    const { stdout } = await run(join(FIXTURES, 'openai-python__inline-snapshot__83b060bae42e.sse'));
    expect(JSON.parse(stdout)).toMatchObject({ content: 'Foo!', tokens: 2, finishReason: 'stop' });
  });

  it('exits 2 with a classified message on broken JSON', async () => {
    const path = tempFile('data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"choices":[\n\n');
    const failure = run(path);
    await expect(failure).rejects.toBeInstanceOf(CliExit);
    await expect(failure).rejects.toMatchObject({
      code: 2,
      message: expect.stringContaining('malformed-json'),
    });
  });

  it('exits 2 with api-error on a streamed error object', async () => {
    const path = tempFile('data: {"error":{"message":"overloaded","type":"server_error"}}\n\n');
    await expect(run(path)).rejects.toMatchObject({
      code: 2,
      message: expect.stringContaining('api-error: overloaded'),
    });
  });

  it('exits 1 when the file cannot be read', async () => {
    await expect(run('/nonexistent/body.sse')).rejects.toMatchObject({
      code: 1,
      message: expect.stringContaining('unreadable'),
    });
  });

  it('classifies non-UTF-8 bytes on stderr and still prints the result of a stream', async () => {
    const broken = tempFile(
      Uint8Array.from([
        ...Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"a'),
        0xff,
        ...Buffer.from('"}}]}\n\n'),
      ]),
    );
    const first = await run(broken);
    expect(first.stderr).toContain('non-utf8');
    expect(first.stderr).toContain('truncated');
    expect(JSON.parse(first.stdout)).toMatchObject({ content: 'a\ufffd', tokens: 1 });
  });

  it.each([
    ['an empty file', '', /empty: .* has no bytes/],
    ['a file of blank lines', '\n\n\n', /empty: no SSE data payload/],
    [
      'a binary file',
      Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00, 0xff, 0xfe]),
      /binary: .* is not text/,
    ],
    [
      'non-UTF-8 text with no payload',
      Uint8Array.from([0x68, 0x69, 0xff, 0x0a]),
      /binary: .* holds no SSE data payload/,
    ],
  ])('exits 2 with a message on %s and prints nothing', async (_name, content, message) => {
    const program = run(tempFile(content));
    await expect(program).rejects.toBeInstanceOf(CliExit);
    await expect(program).rejects.toMatchObject({ code: 2, message: expect.stringMatching(message) });
  });
});
