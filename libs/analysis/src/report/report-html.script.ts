/**
 * The report page's own script (plain ES2017, run by the browser): draws every `.chart` element
 * with uPlot from the JSON in `#fathom-data`, tier bands behind the time charts and breaker
 * marks across them. Each drawn chart records how many data points it got in
 * `data-points` (the browser test reads it); a chart without data is replaced by a note.
 */
export const REPORT_CHART_SCRIPT = String.raw`
(function () {
  'use strict';
  var raw = document.getElementById('fathom-data');
  var data = raw ? JSON.parse(raw.textContent || 'null') : null;
  if (!data) return;
  var COLOURS = ['#1565c0', '#c62828', '#2e7d32', '#ef6c00', '#6a1b9a', '#00838f', '#8d6e63', '#455a64'];
  var BREAKER = { open: '#c62828', 'half-open': '#ef6c00', closed: '#2e7d32' };
  var span = Math.max(1, (data.endMs - data.startMs) / 1000);

  function width(el) {
    return Math.max(320, Math.floor(el.getBoundingClientRect().width || el.clientWidth || 600));
  }

  function countPoints(columns) {
    var n = 0;
    for (var i = 1; i < columns.length; i++) {
      for (var j = 0; j < columns[i].length; j++) if (columns[i][j] !== null && columns[i][j] !== undefined) n++;
    }
    return n;
  }

  function bandsAndMarks(u) {
    var ctx = u.ctx;
    var top = u.bbox.top;
    var height = u.bbox.height;
    ctx.save();
    for (var i = 0; i < data.tiers.length; i++) {
      var b = data.tiers[i];
      var x0 = u.valToPos(b.from, 'x', true);
      var x1 = u.valToPos(b.to, 'x', true);
      ctx.globalAlpha = 0.1;
      ctx.fillStyle = b.colour;
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
    }
    ctx.globalAlpha = 1;
    ctx.lineWidth = 2 * (window.devicePixelRatio || 1);
    ctx.setLineDash([6, 4]);
    for (var k = 0; k < data.breakers.length; k++) {
      var m = data.breakers[k];
      var x = u.valToPos(m.at, 'x', true);
      ctx.strokeStyle = BREAKER[m.to] || '#000';
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
    }
    ctx.restore();
  }

  function timeChart(id, yLabel, names, columns, opts) {
    var el = document.getElementById(id);
    if (!el) return;
    opts = opts || {};
    var series = [{ label: 't (s)' }];
    for (var i = 0; i < names.length; i++) {
      series.push({
        label: names[i],
        stroke: COLOURS[i % COLOURS.length],
        width: 1.5,
        dash: /P50|semantic/.test(names[i]) ? [4, 3] : undefined,
        spanGaps: false,
        points: { show: !opts.bars && columns[0].length < 60 },
        paths: opts.bars ? uPlot.paths.bars({ size: [0.8, 40] }) : undefined,
        fill: opts.bars ? COLOURS[i % COLOURS.length] + '66' : undefined,
      });
    }
    draw(el, {
      width: width(el),
      height: 260,
      scales: { x: { time: false, range: [0, span] }, y: { range: opts.yRange } },
      axes: [{ label: 'seconds since start' }, { label: yLabel, size: 60 }],
      legend: { live: false },
      series: series,
      hooks: { drawClear: [bandsAndMarks] },
    }, columns);
  }

  function draw(el, options, columns) {
    var points = countPoints(columns);
    if (points === 0) {
      el.outerHTML = '<p class="muted">No data for this chart.</p>';
      return;
    }
    new uPlot(options, columns, el);
    el.setAttribute('data-points', String(points));
  }

  var w = data.windows;
  timeChart('chart-e2e', 'ms', ['E2E P50', 'E2E P99', 'corrected E2E P50', 'corrected E2E P99'],
    [data.t, w.e2eP50, w.e2eP99, w.correctedE2eP50, w.correctedE2eP99]);
  timeChart('chart-ttft-itl', 'ms', ['TTFT P50', 'TTFT P99', 'ITL P50', 'ITL P99'],
    [data.t, w.ttftP50, w.ttftP99, w.itlP50, w.itlP99]);
  timeChart('chart-throughput', 'req/s', ['requests/s', 'goodput/s', 'semantic goodput/s'],
    [data.t, w.requestsPerSec, w.goodputPerSec, w.semanticGoodputPerSec]);
  timeChart('chart-tokens', 'tokens/s', ['output tokens/s'], [data.t, w.outputTokensPerSec]);
  var classes = Object.keys(data.errorClasses);
  timeChart('chart-errors', 'errors/s', classes, [data.t].concat(classes.map(function (c) { return data.errorClasses[c]; })), { bars: classes.length === 1 });

  function gpuChart(id, yLabel, metrics, labels, yRange, scale) {
    var present = metrics.filter(function (m) { return data.gpu[m]; });
    if (!present.length) return;
    // One x column for all: the union of the scrape times, each series null where it has no value.
    var times = {};
    present.forEach(function (m) { data.gpu[m][0].forEach(function (t) { times[t] = true; }); });
    var xs = Object.keys(times).map(Number).sort(function (a, b) { return a - b; });
    var columns = [xs];
    var names = [];
    present.forEach(function (m) {
      var at = {};
      data.gpu[m][0].forEach(function (t, i) { at[t] = data.gpu[m][1][i] * ((scale && scale[m]) || 1); });
      columns.push(xs.map(function (t) { return t in at ? at[t] : null; }));
      names.push(labels[metrics.indexOf(m)]);
    });
    var el = document.getElementById(id);
    if (!el) return;
    var series = [{ label: 't (s)' }].concat(names.map(function (n, i) {
      return { label: n, stroke: COLOURS[i % COLOURS.length], width: 1.5, spanGaps: true };
    }));
    draw(el, {
      width: width(el),
      height: 240,
      scales: { x: { time: false, range: [0, span] }, y: { range: yRange } },
      axes: [{ label: 'seconds since start' }, { label: yLabel, size: 60 }],
      legend: { live: false },
      series: series,
      hooks: { drawClear: [bandsAndMarks] },
    }, columns);
  }

  gpuChart('chart-gpu-activity', 'ratio',
    ['sm_active_ratio', 'dram_active_ratio', 'gpu_util_pct', 'kv_cache_usage_ratio'],
    ['SM active', 'DRAM active', 'GPU busy', 'KV-cache use'], [0, 1], { gpu_util_pct: 0.01 });
  gpuChart('chart-gpu-requests', 'requests', ['requests_running', 'requests_waiting'], ['running', 'waiting']);
  gpuChart('chart-gpu-memory', 'MiB', ['fb_used_mib', 'fb_total_mib'], ['used', 'total']);
  gpuChart('chart-gpu-power', 'W', ['power_w'], ['power']);

  function distChart(id, name) {
    var d = data.distributions[name];
    var el = document.getElementById(id);
    if (!el || !d || !d.counts.length) return;
    var log = d.unit === 'ms' && d.edges[d.edges.length - 1] / d.edges[0] > 20;
    var xs = d.counts.map(function (_, i) { return log ? Math.sqrt(d.edges[i] * d.edges[i + 1]) : (d.edges[i] + d.edges[i + 1]) / 2; });
    draw(el, {
      width: width(el),
      height: 220,
      // A log axis only where the values span more than a decade or so: else it shows one tick.
      scales: { x: { time: false, distr: log ? 3 : 1, range: [d.edges[0], d.edges[d.edges.length - 1]] } },
      axes: [{ label: d.unit }, { label: 'count', size: 60 }],
      legend: { live: false },
      series: [{ label: d.unit }, { label: 'count', stroke: '#1565c0', fill: '#1565c066', points: { show: false }, paths: uPlot.paths.bars({ size: [0.9, 60], align: 0 }) }],
    }, [xs, d.counts]);
  }
  distChart('chart-dist-ttft', 'ttft');
  distChart('chart-dist-itl', 'itl');
  distChart('chart-dist-e2e', 'e2e');
  distChart('chart-dist-tokens', 'outputTokens');
  document.body.setAttribute('data-charts-ready', 'true');
})();
`;
