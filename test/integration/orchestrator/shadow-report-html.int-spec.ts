import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext } from 'playwright-core';
import { launchHeadlessChromium } from './headless-chromium.test-util';
import { startEmbedded, type EmbeddedFathom } from '@fathom/runtime';
import { startSimTarget, type SimTarget } from '@fathom/sim';
import type { StoredShadowCampaign } from '@fathom/storage';

const SCREENSHOTS = join(__dirname, '..', '..', '..', 'tmp', 'shadow-report-html');
const WINDOW_MS = 1500;

/**
 * The live shadow campaign's HTML page (`GET /v1/shadow-campaigns/:id/report?format=html`) in a
 * real browser: a campaign fed mirrored copies until its candidate (slower decode) is named, then
 * the page opened offline. Its charts must be drawn from the windows the JSON report holds, its
 * verdict must say what the JSON says, and it must fetch nothing and log no error.
 */
describe('the live shadow report page in a real browser', () => {
  jest.setTimeout(150_000);
  let primary: SimTarget;
  let secondary: SimTarget;
  let candidate: SimTarget;
  let fathom: EmbeddedFathom;
  let context: BrowserContext;
  let browser: Awaited<ReturnType<typeof launchHeadlessChromium>>;

  beforeAll(async () => {
    const sim = (faults: unknown[] = []) =>
      startSimTarget({ port: 0, config: { timeScale: 0.1, faults } as never });
    [primary, secondary, candidate] = await Promise.all([
      sim(),
      sim(),
      sim([{ kind: 'latency_spike', addMs: 40 }]),
    ]);
    fathom = await startEmbedded({ dataDir: null, logLevels: false });
    browser = await launchHeadlessChromium();
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await fathom?.close();
    await Promise.all([primary, secondary, candidate].map((s) => s?.close()));
  });

  it('draws the windows against the noise floor and states the tier the JSON report holds', async () => {
    const created = await fetch(`${fathom.url}/v1/shadow-campaigns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'shadow page <check>',
        primary: { baseUrl: `${primary.url}/v1` },
        secondary: { baseUrl: `${secondary.url}/v1` },
        candidate: { baseUrl: `${candidate.url}/v1` },
        model: 'fathom-sim-8b',
        source: { type: 'live', maxRatePerSec: 50, windowMs: WINDOW_MS },
        onRegression: { windows: 2 },
        concurrency: 4,
        maxTokens: 16,
      }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const json = async () =>
      (
        (await (await fetch(`${fathom.url}/v1/shadow-campaigns/${id}/report`)).json()) as {
          report: StoredShadowCampaign['report'];
        }
      ).report;

    // Copies as a front proxy's mirror sends them, until the candidate is named over 3+ windows.
    const started = Date.now();
    let live = (await json())?.live;
    while (
      (live?.tier !== 'regressed' || live.windows.filter((w) => w.samples > 0).length < 3) &&
      Date.now() - started < 90_000
    ) {
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          fetch(`${fathom.url}/v1/shadow-campaigns/${id}/mirror`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-fathom-intent': `intent-${i % 2}` },
            body: JSON.stringify({
              model: 'fathom-sim-8b',
              messages: [{ role: 'user', content: `Question ${i}: summarise the quarterly report.` }],
              max_tokens: 16,
            }),
          }).then((r) => r.arrayBuffer()),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 150));
      live = (await json())?.live;
    }
    expect(live?.tier).toBe('regressed');

    const page = await fetch(`${fathom.url}/v1/shadow-campaigns/${id}/report?format=html`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    // The JSON as of the page: the page is rendered from the stored report, which only grows.
    const report = (await json())!;
    await fetch(`${fathom.url}/v1/shadow-campaigns/${id}/stop`, { method: 'POST' });

    await mkdir(SCREENSHOTS, { recursive: true });
    const file = join(SCREENSHOTS, 'shadow-report.html');
    await writeFile(file, html);
    const url = pathToFileURL(file).href;
    const fetched: string[] = [];
    await context.route('**/*', (route) => {
      if (route.request().url() === url) return route.continue();
      fetched.push(route.request().url());
      return route.abort();
    });
    const tab = await context.newPage();
    const errors: string[] = [];
    tab.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    tab.on('pageerror', (e) => errors.push(e.message));
    await tab.goto(url);

    // The name is escaped text, not markup.
    expect(await tab.locator('h1').first().textContent()).toContain('shadow page <check>');
    const tier = await tab.$$eval(
      '#verdict .card',
      (cards) =>
        cards
          .map((c) => [c.querySelector('span')?.textContent, c.querySelector('b')?.textContent])
          .find(([label]) => label === 'Tier')?.[1],
    );
    expect(tier).toBe('regressed');

    // Every metric the windows compared is a chart with one dot per judged window, drawn on screen.
    const charts = await tab.$$eval('#charts .chart-box', (boxes) =>
      boxes.map((box) => {
        const svg = box.querySelector('svg');
        const rect = svg?.getBoundingClientRect();
        return {
          metric: box.getAttribute('data-metric'),
          dots: svg?.querySelectorAll('circle').length ?? 0,
          beyondDots: svg?.querySelectorAll('circle.beyond').length ?? 0,
          candidatePath: svg?.querySelector('path.cand')?.getAttribute('d') ?? '',
          caption: box.querySelector('figcaption small')?.textContent ?? null,
          visible: !!rect && rect.width > 100 && rect.height > 20,
        };
      }),
    );
    const windows = report.live!.windows;
    const judgedOn = (metric: string) =>
      windows.filter((w) =>
        w.groups.some((g) => g.metrics.some((m) => m.metric === metric && m.samples > 0)),
      );
    const e2e = charts.find((c) => c.metric === 'e2eMs');
    expect(e2e).toBeDefined();
    const e2eJudged = judgedOn('e2eMs');
    const e2eBeyond = e2eJudged.filter((w) =>
      w.groups.some((g) => g.metrics.some((m) => m.metric === 'e2eMs' && m.samples > 0 && m.beyondNoise)),
    );
    expect(e2e).toEqual({
      metric: 'e2eMs',
      dots: e2eJudged.length,
      beyondDots: e2eBeyond.length,
      candidatePath: expect.stringMatching(/^M[\d.]+,[\d.]+(L[\d.]+,[\d.]+)+$/),
      caption: `${e2eBeyond.length}/${e2eJudged.length} windows beyond the noise`,
      visible: true,
    });
    expect(e2eBeyond.length).toBeGreaterThan(0);
    for (const chart of charts.filter((c) => c.caption !== null))
      expect({ metric: chart.metric, dots: chart.dots, visible: chart.visible }).toEqual({
        metric: chart.metric,
        dots: judgedOn(chart.metric!).length,
        visible: true,
      });

    await tab.screenshot({ path: join(SCREENSHOTS, 'shadow-report.png'), fullPage: true });
    await tab.close();
    expect(errors).toEqual([]);
    expect(fetched).toEqual([]);
  });
});
