import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretResolutionError, resolveSecretRef } from './secret.resolver';

describe(resolveSecretRef.name, () => {
  const dir = mkdtempSync(join(tmpdir(), 'fathom-secrets-'));
  writeFileSync(join(dir, 'key'), 'sk-file-123\n');
  writeFileSync(join(dir, 'broken'), 'sk-abc\r\nX-Injected: yes\n');
  const sources = {
    env: { FATHOM_SECRET_KEY: 'sk-env-123\n', FATHOM_SECRET_BROKEN: 'sk-abc\ndef' },
    secretsDir: dir,
  };

  it('drops a trailing newline, from a variable as from a file', async () => {
    expect(await resolveSecretRef({ env: 'FATHOM_SECRET_KEY' }, sources, 'target.apiKey')).toBe('sk-env-123');
    expect(await resolveSecretRef({ file: 'key' }, sources, 'target.apiKey')).toBe('sk-file-123');
  });

  it('refuses a line break inside, naming the field and never the value', async () => {
    // Sent in a header: undici refused it and its pool stalled (the run never ended), the own
    // HTTP/1.1 client would have written the rest as a header of its own.
    for (const ref of [{ env: 'FATHOM_SECRET_BROKEN' }, { file: 'broken' }]) {
      const error = await resolveSecretRef(ref, sources, 'scenario.steps.0.headers.x-api-key').catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(SecretResolutionError);
      expect(error.message).toBe(
        'scenario.steps.0.headers.x-api-key: the secret holds a line break or NUL inside; it is sent in a header',
      );
      expect(error.message).not.toContain('sk-abc');
    }
  });
});
