import { readFileSync } from 'node:fs';
import type { ReportAssets } from './report-html.render';

let cached: ReportAssets | null = null;

/**
 * uPlot's browser build and CSS, read once from the installed package, to be inlined into
 * every HTML report. uPlot: about 50 kB minified, draws tens of thousands of points on a canvas
 * without lag, no dependencies, MIT.
 */
export function loadReportAssets(): ReportAssets {
  cached ??= {
    uplotJs: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    uplotCss: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  };
  return cached;
}
