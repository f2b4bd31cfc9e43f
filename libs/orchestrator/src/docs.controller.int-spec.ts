import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { chromium } from 'playwright-core';
import { DocsController } from './docs.controller';

@Module({ controllers: [DocsController] })
class DocsOnlyModule {}

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

describe(DocsController.name, () => {
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    app = await NestFactory.create(DocsOnlyModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app.close();
  });

  it('answers the OpenAPI document as JSON to a client that does not ask for HTML', async () => {
    for (const path of ['/docs', '/docs/openapi.json']) {
      const res = await fetch(`${url}${path}`, { headers: { accept: 'application/json' } });
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths)).toContain('/v1/runs/{id}/progress');
    }
  });

  it('sends a browser from /docs to the Swagger UI page at /docs/', async () => {
    const res = await fetch(`${url}/docs`, { headers: { accept: 'text/html,*/*' }, redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/docs/');
    const page = await fetch(`${url}/docs/`, { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('<script src="./swagger-ui-bundle.js"');
    const initializer = await (await fetch(`${url}/docs/swagger-initializer.js`)).text();
    expect(initializer).toContain("url: './openapi.json'");
  });

  it('serves the listed swagger-ui-dist files and nothing else', async () => {
    const bundle = await fetch(`${url}/docs/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/^application\/javascript/);
    for (const path of [
      '/docs/package.json',
      '/docs/..%2F..%2Fpackage.json',
      '/docs/swagger-ui-bundle.js.map',
    ])
      expect((await fetch(`${url}${path}`)).status).toBe(404);
  });

  it('renders every operation of the document in a real browser, without a console error', async () => {
    if (!CHROMIUM) throw new Error('needs Debian chromium (/usr/bin/chromium), which .ci/run installs');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${url}/docs`);
      await page.waitForSelector('.opblock', { timeout: 20_000 });
      const paths = await page.locator('.opblock-summary-path').allInnerTexts();
      expect(paths.map((p) => p.replace(/\u200b/g, ''))).toEqual(
        expect.arrayContaining(['/v1/campaigns', '/v1/runs/{id}/progress', '/v1/runs/{id}/abort']),
      );
      expect(await page.title()).toBe('Swagger UI');
      await mkdir(join(__dirname, '..', '..', '..', 'tmp'), { recursive: true });
      await page.screenshot({ path: join(__dirname, '..', '..', '..', 'tmp', 'docs-swagger-ui.png') });
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
