import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's chromium (`.ci/run` installs it); playwright-core drives it, it downloads nothing. */
const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium for the report pages' browser tests, on a fresh profile (playwright passes
 * it as --user-data-dir), offline-minded (no QUIC, no background networking, no updates).
 * `close` ends it and deletes the profile.
 */
export async function launchHeadlessChromium(): Promise<{
  context: BrowserContext;
  close(): Promise<void>;
}> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = await mkdtemp(join(tmpdir(), 'fathom-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    viewport: { width: 1400, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
