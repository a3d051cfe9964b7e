import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { chartModel, dateTicks, fmtNum, niceTicks } from '../static/js/chart.js';

// Fixtures in the contract's shape (application/vnd.glassroom.chart+json),
// as the kernel describes matplotlib figures.
const fixtures = JSON.parse(readFileSync(new URL('./testdata/charts.json', import.meta.url), 'utf8'));

const tips = (m) => m.shapes.filter((s) => s.tip !== undefined).map((s) => s.tip);
const texts = (m, cls) => m.shapes.filter((s) => s.cls.split(' ').includes(cls)).map((s) => s.text);
const inside = (m) =>
  m.shapes.every((s) =>
    Object.entries(s.attrs).every(([k, v]) => !['x', 'y', 'cx', 'cy', 'x1', 'x2', 'y1', 'y2'].includes(k) || (Number.isFinite(v) && v >= -1 && v <= Math.max(m.width, m.height) + 1))
  );

test('line: one marker per point, hover text "label: x, y", a polyline per series, a legend', () => {
  const m = chartModel(fixtures.line);
  assert.equal(m.type, 'line');
  assert.deepEqual(tips(m), ['squares: 0, 0', 'squares: 1, 1', 'squares: 2, 4', 'squares: 3, 9', 'halves: 0, 0', 'halves: 1, 0.5', 'halves: 2, 1', 'halves: 3, 1.5']);
  assert.equal(m.shapes.filter((s) => s.cls === 'chart-line').length, 2);
  assert.deepEqual(texts(m, 'chart-title'), ['Growth']);
  assert.deepEqual(texts(m, 'chart-axis-label'), ['time (s)', 'value']);
  assert.deepEqual(texts(m, 'chart-legend'), ['squares', 'halves']);
  // The figure's ticks and labels are used when in range.
  assert.deepEqual(texts(m, 'chart-tick-label').slice(0, 4), ['0.0', '1.0', '2.0', '3.0']);
  assert.ok(inside(m));
  // Larger y is higher up: (3, 9) is above (0, 0).
  const pts = m.shapes.filter((s) => s.tag === 'circle');
  assert.ok(pts[3].attrs.cy < pts[0].attrs.cy && pts[3].attrs.cx > pts[0].attrs.cx);
});

test('scatter: points without a line; a log axis drops non-positive values and ticks at powers of ten', () => {
  const m = chartModel(fixtures.scatter_log);
  assert.equal(m.shapes.filter((s) => s.cls === 'chart-line').length, 0);
  assert.deepEqual(tips(m), ['cells: 1, 1', 'cells: 2, 10', 'cells: 3, 1000']);
  assert.deepEqual(texts(m, 'chart-tick-label').filter((t) => /^1(0*)$/.test(t)).slice(-4), ['1', '10', '100', '1000']);
  const ys = m.shapes.filter((s) => s.tag === 'circle').map((s) => s.attrs.cy);
  // Equal ratios are equal distances on a log scale: 1->10 and 10->1000 (twice as far).
  assert.ok(Math.abs((ys[1] - ys[2]) - 2 * (ys[0] - ys[1])) < 0.5, String(ys));
});

test('line over dates: ISO x values, shown as dates', () => {
  const m = chartModel(fixtures.line_dates);
  assert.deepEqual(tips(m), ['price: 2024-01-01, 10', 'price: 2024-01-02, 12.5', 'price: 2024-01-05T12:30Z, 11']);
  assert.ok(inside(m));
  const xs = m.shapes.filter((s) => s.tag === 'circle').map((s) => s.attrs.cx);
  assert.ok(xs[0] < xs[1] && xs[1] < xs[2]);
});

test('line with categories on x', () => {
  const m = chartModel({ type: 'line', elements: [{ label: 'n', points: [['mon', 1], ['tue', 3], ['wed', 2]] }] });
  assert.deepEqual(tips(m), ['n: mon, 1', 'n: tue, 3', 'n: wed, 2']);
  assert.deepEqual(texts(m, 'chart-tick-label').slice(0, 3), ['mon', 'tue', 'wed']);
});

test('bar: grouped bars, hover "group, label: value", negative bars go down from 0', () => {
  const m = chartModel(fixtures.bar);
  assert.deepEqual(tips(m), ['2023, apples: 3', '2023, pears: -2', '2024, apples: 5', '2024, pears: 1']);
  const bars = m.shapes.filter((s) => s.cls === 'chart-bar');
  assert.equal(bars.length, 4);
  const [apples23, pears23] = bars;
  // Both start or end at the zero line.
  assert.equal(Math.round(apples23.attrs.y + apples23.attrs.height), Math.round(pears23.attrs.y));
  assert.deepEqual(texts(m, 'chart-legend'), ['2023', '2024']);
});

test('bar with one group: hover "label: value", no legend', () => {
  const m = chartModel({ type: 'bar', elements: [{ label: 'a', group: '', value: 1.23456 }] });
  assert.deepEqual(tips(m), ['a: 1.235']);
  assert.deepEqual(texts(m, 'chart-legend'), []);
});

test('pie: one wedge per element with its share', () => {
  const m = chartModel(fixtures.pie);
  assert.deepEqual(tips(m), ['cats: 25% (90\u00b0)', 'dogs: 50% (180\u00b0)', 'fish: 25% (90\u00b0)']);
  assert.deepEqual(m.shapes.filter((s) => s.cls === 'chart-wedge').map((s) => s.tag), ['path', 'path', 'path']);
  // The half wedge uses the large-arc flag only when over 180 degrees.
  assert.match(m.shapes.find((s) => s.tip?.startsWith('dogs')).attrs.d, / 0 0 1 /);
  const whole = chartModel({ type: 'pie', elements: [{ label: 'all', angle: 360, radius: 1 }] });
  assert.equal(whole.shapes.find((s) => s.tip).tag, 'circle');
});

test('box and whisker: a box per element with its five numbers, outliers as points', () => {
  const m = chartModel(fixtures.box);
  assert.deepEqual(tips(m), ['A: min 1, Q1 2, median 3, Q3 4, max 5', 'A outlier: 9', 'B: min 2, Q1 2.5, median 3, Q3 3.5, max 4']);
  assert.equal(m.shapes.filter((s) => s.cls === 'chart-box').length, 2);
  assert.equal(m.shapes.filter((s) => s.cls === 'chart-median').length, 2);
});

test('superchart: its charts in a grid, each with its own hover texts', () => {
  const m = chartModel(fixtures.superchart);
  assert.equal(m.type, 'superchart');
  assert.deepEqual(texts(m, 'chart-title'), ['Both', 'left', 'right']);
  assert.deepEqual(tips(m), ['s: 1, 2', 's: 2, 3', 'x: 1']);
  // Two charts side by side: the second's shapes are right of the first's.
  const [p] = m.shapes.filter((s) => s.tip === 's: 1, 2');
  const [b] = m.shapes.filter((s) => s.tip === 'x: 1');
  assert.ok(b.attrs.x > p.attrs.cx);
  assert.equal(m.width, 840);
  assert.ok(inside(m));
});

test('unknown, malformed and hostile specs give null or skip the bad parts', () => {
  assert.equal(chartModel({ type: 'unknown', elements: [] }), null);
  assert.equal(chartModel(null), null);
  assert.equal(chartModel('line'), null);
  assert.equal(chartModel({ type: 'superchart', elements: [{ type: 'unknown' }, { type: 'superchart', elements: [] }] }), null);
  const m = chartModel({ type: 'line', title: { x: 1 }, elements: [{ label: 'ok', points: [[1, 2], 'x', [null, 1], [2, 'y'], [3]] }, 7, null] });
  assert.deepEqual(tips(m), ['ok: 1, 2']);
  const big = chartModel({ type: 'scatter', elements: [{ label: 'many', points: Array.from({ length: 25000 }, (_, i) => [i, i]) }] });
  assert.equal(tips(big).length, 20000);
  assert.equal(big.truncated, true);
  assert.equal(chartModel({ ...fixtures.bar, truncated: true }).truncated, true);
  assert.equal(chartModel(fixtures.bar).truncated, false);
  const long = chartModel({ type: 'bar', elements: [{ label: 'x'.repeat(500), value: 1 }] });
  assert.ok(tips(long)[0].length < 100);
});

test('number and tick helpers', () => {
  assert.equal(fmtNum(3), '3');
  assert.equal(fmtNum(0.1 + 0.2), '0.3');
  assert.equal(fmtNum(123456.789), '123500');
  assert.equal(fmtNum(1e-7), '1e-7');
  assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
  assert.deepEqual(niceTicks(-1, 1, 4), [-1, -0.5, 0, 0.5, 1]);
  const day = 86400000;
  assert.deepEqual(dateTicks(0, 4 * day), [0, day, 2 * day, 3 * day, 4 * day]);
});
