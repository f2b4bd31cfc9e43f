import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const { verifyDeploy } = createRequire(__filename)(join(ROOT, 'deploy', 'verify.js')) as {
  verifyDeploy: (root?: string, options?: { composeText?: string }) => { problems: string[] };
};

describe('deploy/verify.js', () => {
  it('finds no problem in the deployment files as they are', async () => {
    const sut = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [join(ROOT, 'deploy', 'verify.js')], (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      ),
    );
    expect(sut.stderr).toBe('');
    expect(sut.stdout).toMatch(/^deploy: ok \(\d+ topics/);
    expect(sut.code).toBe(0);
  });

  it('names a topic of libs/contracts that kafka-init does not create', () => {
    const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    const drifted = compose.replace(/^\s+fathom\.state\.root-cause\.v1\n/m, '');
    expect(drifted).not.toBe(compose);

    const sut = verifyDeploy(ROOT, { composeText: drifted });

    expect(sut.problems).toEqual([expect.stringContaining('misses fathom.state.root-cause.v1')]);
  });

  it('names a shadow-gateway variable the CLI does not read, and a healthcheck off the admin port', () => {
    const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    const drifted = compose
      .replace('FATHOM_SHADOW_SAMPLE_RATE:', 'FATHOM_SHADOW_SAMPLING:')
      .replace('"/health", "9464"]', '"/health", "9091"]');
    expect(drifted).not.toBe(compose);

    const sut = verifyDeploy(ROOT, { composeText: drifted });

    expect(sut.problems).toEqual([
      'shadow-gateway sets FATHOM_SHADOW_SAMPLING, which fathom shadow gateway does not read',
      "shadow-gateway's healthcheck does not probe its admin port 9464",
    ]);
  });
});
