import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext } from 'playwright-core';
import { launchHeadlessChromium } from './headless-chromium.test-util';
import { request } from 'undici';
import { startEmbedded, waitForRun, type EmbeddedFathom } from '@fathom/runtime';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import type { RunReportDocument } from '@fathom/analysis';

const SCREENSHOTS = join(__dirname, '..', '..', '..', 'tmp', 'report-html');

/** Every chart the page draws for a chat run with errors and GPU/server scrapes. */
const EXPECTED_CHARTS = [
  'chart-e2e',
  'chart-ttft-itl',
  'chart-throughput',
  'chart-tokens',
  'chart-errors',
  'chart-dist-ttft',
  'chart-dist-itl',
  'chart-dist-e2e',
  'chart-dist-tokens',
  'chart-gpu-activity',
  'chart-gpu-requests',
  'chart-gpu-memory',
  'chart-gpu-power',
];

describe('GET /v1/runs/:id/report.html in a real browser', () => {
  jest.setTimeout(180_000);
  let sim: SimTarget;
  let fathom: EmbeddedFathom;
  let context: BrowserContext;
  let browser: Awaited<ReturnType<typeof launchHeadlessChromium>>;

  beforeAll(async () => {
    process.env.FATHOM_SEMANTIC_EMBEDDER = 'off';
    sim = await startSimTarget({ port: 0, config: { timeScale: 0.05 } });
    // The key by reference (issue 14): the load-generator resolves it; the report must not show it.
    process.env.FATHOM_SECRET_REPORT_HTML = 'sk-must-not-appear';
    fathom = await startEmbedded({ dataDir: null, logLevels: ['error'] });
    browser = await launchHeadlessChromium();
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await fathom?.close();
    await sim?.close();
    delete process.env.FATHOM_SEMANTIC_EMBEDDER;
    delete process.env.FATHOM_SECRET_REPORT_HTML;
  });

  it('draws every chart with data, offline and without console errors, and states the JSON verdict', async () => {
    // Planted faults so every panel has something to show: risky tokens and failed requests.
    sim.faults.set({ kind: 'hallucination_rate', rate: 0.5 });
    sim.faults.set({ kind: 'http_5xx', rate: 0.3, status: 503 });
    const { runId } = await fathom.campaigns.submit(
      {
        name: 'report page',
        target: {
          baseUrl: `${sim.url}/v1`,
          apiKey: { env: 'FATHOM_SECRET_REPORT_HTML' },
          metricsUrls: [`${sim.url}/metrics`, `${sim.url}/dcgm/metrics`],
        },
        scenario: {
          type: 'chat',
          model: 'fathom-sim-8b',
          prompts: ['Explain KV caching.', 'Name three rivers.'],
          maxTokens: 32,
          logprobs: true,
          topLogprobs: 5,
        },
        load: { concurrency: 12, durationMs: 4000 },
        slo: { p99Ms: 60_000, maxErrorRate: 0.5 },
        reruns: { maxReruns: 0, cooldownMs: 0 },
      },
      'api',
    );
    await waitForRun(fathom.runs, runId, { timeoutMs: 90_000 });
    sim.faults.clearAll();

    const json = await request(`${fathom.url}/v1/runs/${runId}/report`);
    expect(json.statusCode).toBe(200);
    const doc = ((await json.body.json()) as { document: RunReportDocument }).document;
    const page = await request(`${fathom.url}/v1/runs/${runId}/report.html`);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const html = await page.body.text();
    expect(html).not.toContain('sk-must-not-appear');

    await mkdir(SCREENSHOTS, { recursive: true });
    const file = join(SCREENSHOTS, 'report.html');
    await writeFile(file, html);
    const url = pathToFileURL(file).href;

    const fetched: string[] = [];
    await context.route('**/*', (route) => {
      if (route.request().url() === url) return route.continue();
      fetched.push(route.request().url());
      return route.abort();
    });
    const tab = await context.newPage();
    const consoleErrors: string[] = [];
    tab.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    tab.on('pageerror', (e) => consoleErrors.push(e.message));
    await tab.goto(url);
    await tab.waitForSelector('body[data-charts-ready="true"]', { timeout: 15_000 });

    const charts = await tab.$$eval('.chart', (els) =>
      els.map((el) => {
        const canvas = el.querySelector('canvas');
        let inked = 0;
        if (canvas) {
          const ctx = canvas.getContext('2d')!;
          const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
          // Pixels that are neither transparent nor near-white: lines, bars, bands.
          for (let i = 0; i < pixels.length; i += 4)
            if (pixels[i + 3] > 0 && pixels[i] + pixels[i + 1] + pixels[i + 2] < 600) inked++;
        }
        return { id: el.id, points: Number(el.getAttribute('data-points') ?? 0), canvas: !!canvas, inked };
      }),
    );
    expect(charts.map((c) => c.id).sort()).toEqual([...EXPECTED_CHARTS].sort());
    for (const c of charts) {
      expect({ id: c.id, canvas: c.canvas, drawn: c.points > 0 && c.inked > 100 }).toEqual({
        id: c.id,
        canvas: true,
        drawn: true,
      });
    }

    const verdict = await tab.$eval('#verdict', (el) => ({
      slo: el.getAttribute('data-slo'),
      tier: el.getAttribute('data-tier'),
      valid: el.getAttribute('data-valid'),
      sloText: el.ownerDocument.getElementById('verdict-slo')!.textContent,
      tierText: el.ownerDocument.getElementById('verdict-tier')!.textContent,
      validityText: el.ownerDocument.getElementById('verdict-validity')!.textContent,
    }));
    expect(verdict).toEqual({
      slo: doc.summary.slo.passed ? 'passed' : 'failed',
      tier: doc.tiers.final ?? '',
      valid: String(doc.validity.valid),
      sloText: doc.summary.slo.passed ? 'PASSED' : 'FAILED',
      tierText: doc.tiers.final ?? 'n/a',
      validityText: doc.validity.valid ? 'VALID' : 'INVALID',
    });
    // The heat map: sampled responses, some with hallucination-risk spans marked.
    expect(await tab.locator('.token-sample').count()).toBeGreaterThan(0);
    expect(await tab.locator('.tok.risk').count()).toBeGreaterThan(0);
    expect(await tab.locator('#spec pre').textContent()).toContain('[redacted]');

    await tab.screenshot({ path: join(SCREENSHOTS, 'report.png'), fullPage: true });
    for (const id of await tab.$$eval('main > section', (els) => els.map((el) => el.id)))
      await tab.locator(`section#${id}`).screenshot({ path: join(SCREENSHOTS, `section-${id}.png`) });
    await tab.close();
    expect(consoleErrors).toEqual([]);
    expect(fetched).toEqual([]);
  });
});
