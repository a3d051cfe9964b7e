// @ts-check
// Interactive charts from application/vnd.glassroom.chart+json (the
// kernel's description of a matplotlib figure: E2B's chart shape): line,
// scatter, bar, pie, box-and-whisker, and a superchart (a figure of
// several axes) as a grid of those.
//
// chartModel is pure: it turns the JSON into shapes with absolute SVG
// coordinates, each element carrying its hover text ("label: x, y"), so
// the unit tests check layout and hover text without a DOM. renderChart
// builds the <svg> from the model (createElementNS and attributes only;
// every text goes in through textContent) and shows the hover text of the
// element under the pointer in a tooltip. The JSON is untrusted: anything
// malformed is skipped, sizes are capped, an unknown type gives null.

/**
 * One SVG element of a chart. attrs are SVG attributes; tip is the hover
 * text of a data element.
 * @typedef {object} Shape
 * @property {'line' | 'rect' | 'circle' | 'path' | 'polyline' | 'text'} tag
 * @property {{[name: string]: string | number}} attrs
 * @property {string} cls its class (chart-axis, chart-point, ...)
 * @property {string} [text] a text element's content
 * @property {string} [tip] hover text
 */

/**
 * @typedef {object} ChartModel
 * @property {number} width
 * @property {number} height
 * @property {Shape[]} shapes
 * @property {string} type the chart's type (superchart for a grid)
 * @property {boolean} truncated whether the kernel or this page left data out
 */

/** @typedef {{x: number, y: number, w: number, h: number}} Box */

export const CHART_MIME = 'application/vnd.glassroom.chart+json';

// The types chartModel draws; any other gives null (the PNG alone).
export const CHART_TYPES = ['line', 'scatter', 'bar', 'pie', 'box_and_whisker', 'superchart'];

// Bounds on what one chart draws, whatever the JSON holds.
const MAX_POINTS = 20000; // points (or bars, wedges, boxes) in one chart
const MAX_SERIES = 50;
const MAX_SUBCHARTS = 16;
const MAX_LABEL = 80; // characters of a label shown

const CHART_W = 560;
const CHART_H = 340;
const CELL_W = 420;
const CELL_H = 300;

// tab10, matplotlib's default cycle.
export const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

/**
 * @param {unknown} v
 * @returns {v is {[k: string]: unknown}}
 */
function isObj(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** @param {unknown} v */
function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

// str returns v as a short string ('' for null and objects).
/** @param {unknown} v */
function str(v) {
  if (typeof v === 'string') return v.length > MAX_LABEL ? v.slice(0, MAX_LABEL - 1) + '\u2026' : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return '';
}

// fmtNum formats a number for ticks and hover texts: integers in full,
// others with up to 4 significant digits, very large or small ones in
// exponent form.
/**
 * @param {number} v
 * @returns {string}
 */
export function fmtNum(v) {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e15 || a < 1e-4)) return v.toExponential(3).replace(/\.?0+e/, 'e');
  return String(Number(v.toPrecision(4)));
}

// fmtDate shows an epoch time in ms as ISO 8601, without a zero time of day.
/** @param {number} ms */
function fmtDate(ms) {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return '';
  const iso = d.toISOString();
  if (iso.endsWith('T00:00:00.000Z')) return iso.slice(0, 10);
  return iso.replace('.000Z', 'Z').replace(':00Z', 'Z');
}

/** @param {unknown} v @returns {number | null} */
function parseDate(v) {
  if (typeof v !== 'string' || !/^\d{4}-\d\d/.test(v)) return null;
  // Naive ISO times (no zone) are read as UTC, so that every viewer sees the same axis.
  const s = /T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(v) ? v + 'Z' : v;
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : null;
}

/**
 * An axis: maps data values to pixels, with ticks.
 * @typedef {object} Axis
 * @property {(v: number) => number} px data value (after category/date mapping) to pixel
 * @property {{at: number, label: string}[]} ticks in pixels
 * @property {(v: number) => boolean} ok whether v can be shown on the scale (log: > 0)
 */

// forward is the scale's transform; values it cannot show give NaN.
/**
 * @param {string} scale
 * @returns {(v: number) => number}
 */
function forward(scale) {
  switch (scale) {
    case 'log':
      return (v) => (v > 0 ? Math.log10(v) : NaN);
    case 'symlog':
      return (v) => Math.sign(v) * Math.log10(1 + Math.abs(v));
    case 'logit':
      return (v) => (v > 0 && v < 1 ? Math.log10(v / (1 - v)) : NaN);
    default:
      return (v) => v;
  }
}

// niceTicks returns about n round values covering [lo, hi].
/**
 * @param {number} lo
 * @param {number} hi
 * @param {number} n
 * @returns {number[]}
 */
export function niceTicks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, n);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 50; v += step) {
    out.push(Math.abs(v) < step * 1e-9 ? 0 : Number(v.toPrecision(12)));
  }
  return out;
}

// dateTicks returns about 5 round times (ms) covering [lo, hi]: whole
// seconds, minutes, hours or days (UTC).
/**
 * @param {number} lo
 * @param {number} hi
 * @returns {number[]}
 */
export function dateTicks(lo, hi) {
  const s = 1000;
  const steps = [s, 5 * s, 15 * s, 30 * s, 60 * s, 300 * s, 900 * s, 1800 * s, 3600 * s, 3 * 3600 * s, 6 * 3600 * s, 12 * 3600 * s];
  const day = 86400 * s;
  for (const d of [1, 2, 7, 14, 30, 91, 365]) steps.push(d * day);
  const step = steps.find((st) => (hi - lo) / st <= 6) || Math.ceil((hi - lo) / 6 / (365 * day)) * 365 * day;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi && out.length < 50; v += step) out.push(v);
  return out;
}

// makeAxis builds an axis over the values vals (already numbers: dates as
// ms, categories as their index) spanning pixels [p0, p1].
/**
 * @param {object} o
 * @param {number[]} o.vals
 * @param {string} o.scale linear, log, symlog, logit, datetime, categorical
 * @param {number} o.p0
 * @param {number} o.p1
 * @param {unknown} o.ticks the JSON's ticks
 * @param {unknown} o.tickLabels the JSON's tick labels
 * @param {string[]} [o.categories] names of a categorical axis
 * @param {boolean} [o.zero] include 0 (bars)
 * @param {boolean} [o.band] categories take a band each (bars, boxes) instead of a point
 * @returns {Axis}
 */
function makeAxis({ vals, scale, p0, p1, ticks, tickLabels, categories, zero, band }) {
  if (categories) {
    const n = Math.max(1, categories.length);
    const step = (p1 - p0) / (band ? n : Math.max(1, n - 1));
    const off = band ? step / 2 : n === 1 ? (p1 - p0) / 2 : 0;
    /** @param {number} i */
    const px = (i) => p0 + off + i * step;
    const every = Math.max(1, Math.ceil(n / 20));
    return {
      px,
      ok: isNum,
      ticks: categories.map((c, i) => ({ at: px(i), label: c })).filter((_, i) => i % every === 0)
    };
  }
  const f = forward(scale);
  const tv = vals.map(f).filter(isNum);
  if (zero) tv.push(0);
  let lo = tv.length ? Math.min(...tv) : 0;
  let hi = tv.length ? Math.max(...tv) : 1;
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  } else if (!zero || lo < 0 || hi > 0) {
    const pad = (hi - lo) * 0.05;
    if (!(zero && lo === 0)) lo -= pad;
    if (!(zero && hi === 0)) hi += pad;
  }
  /** @param {number} v */
  const px = (v) => p0 + ((f(v) - lo) / (hi - lo)) * (p1 - p0);
  /** @param {number} v */
  const ok = (v) => isNum(f(v));
  /** @param {number} v */
  const label = (v) => (scale === 'datetime' ? fmtDate(v) : fmtNum(v));

  // The figure's own ticks when it has them (in range), else round ones.
  /** @type {{at: number, label: string}[]} */
  let out = [];
  if (Array.isArray(ticks) && ticks.length <= 200) {
    const labels = Array.isArray(tickLabels) && tickLabels.length === ticks.length ? tickLabels : null;
    ticks.forEach((t, i) => {
      const v = scale === 'datetime' ? (isNum(t) ? t : parseDate(t)) : t;
      if (!isNum(v) || !ok(v)) return;
      const tf = f(v);
      if (tf < lo - 1e-9 * (hi - lo) || tf > hi + 1e-9 * (hi - lo)) return;
      const given = labels ? str(labels[i]) : '';
      out.push({ at: px(v), label: given || label(v) });
    });
  }
  if (out.length < 2) {
    if (scale === 'log') {
      out = [];
      for (let e = Math.ceil(lo); e <= Math.floor(hi) && out.length < 30; e++) out.push({ at: px(Math.pow(10, e)), label: fmtNum(Math.pow(10, e)) });
    }
    if (out.length < 2 && scale === 'datetime') {
      out = dateTicks(lo, hi).map((v) => ({ at: px(v), label: label(v) }));
    } else if (out.length < 2 && scale !== 'symlog' && scale !== 'logit' && scale !== 'log') {
      out = niceTicks(lo, hi, 5).map((v) => ({ at: px(v), label: label(v) }));
    } else if (out.length < 2) {
      // Ticks evenly in the transformed space, labelled in data values.
      const inv = scale === 'symlog' ? (/** @type {number} */ t) => Math.sign(t) * (Math.pow(10, Math.abs(t)) - 1) : scale === 'logit' ? (/** @type {number} */ t) => 1 / (1 + Math.pow(10, -t)) : (/** @type {number} */ t) => Math.pow(10, t);
      out = niceTicks(lo, hi, 5).map((t) => ({ at: p0 + ((t - lo) / (hi - lo)) * (p1 - p0), label: fmtNum(inv(t)) }));
    }
  }
  return { px, ok, ticks: out };
}

// Plot frames: the area inside the axes, leaving room for ticks and labels.
/**
 * @param {Box} box
 * @param {boolean} legend
 */
function plotArea(box, legend) {
  const left = box.x + 58;
  const top = box.y + 30;
  const right = box.x + box.w - (legend ? 120 : 16);
  const bottom = box.y + box.h - 44;
  return { left, top, right: Math.max(left + 40, right), bottom: Math.max(top + 40, bottom) };
}

/**
 * @param {Shape[]} shapes
 * @param {string} tag
 * @param {string} cls
 * @param {{[name: string]: string | number}} attrs
 * @param {{text?: string, tip?: string}} [extra]
 */
function push(shapes, tag, cls, attrs, extra) {
  /** @type {Shape} */
  const s = { tag: /** @type {Shape['tag']} */ (tag), cls, attrs };
  if (extra && extra.text !== undefined) s.text = extra.text;
  if (extra && extra.tip !== undefined) s.tip = extra.tip;
  shapes.push(s);
}

/** @param {number} v */
const r1 = (v) => Math.round(v * 10) / 10;

// frame draws the title, axes, ticks and axis labels.
/**
 * @param {Shape[]} shapes
 * @param {{[k: string]: unknown}} spec
 * @param {Box} box
 * @param {{left: number, top: number, right: number, bottom: number}} a
 * @param {Axis | null} xa
 * @param {Axis | null} ya
 */
function frame(shapes, spec, box, a, xa, ya) {
  const title = str(spec.title);
  if (title) push(shapes, 'text', 'chart-title', { x: r1(box.x + box.w / 2), y: box.y + 18, 'text-anchor': 'middle' }, { text: title });
  if (!xa || !ya) return;
  push(shapes, 'line', 'chart-axis', { x1: a.left, y1: a.bottom, x2: a.right, y2: a.bottom });
  push(shapes, 'line', 'chart-axis', { x1: a.left, y1: a.top, x2: a.left, y2: a.bottom });
  for (const t of xa.ticks) {
    push(shapes, 'line', 'chart-tick', { x1: r1(t.at), y1: a.bottom, x2: r1(t.at), y2: a.bottom + 4 });
    push(shapes, 'text', 'chart-tick-label', { x: r1(t.at), y: a.bottom + 16, 'text-anchor': 'middle' }, { text: t.label });
  }
  for (const t of ya.ticks) {
    push(shapes, 'line', 'chart-grid', { x1: a.left, y1: r1(t.at), x2: a.right, y2: r1(t.at) });
    push(shapes, 'text', 'chart-tick-label', { x: a.left - 6, y: r1(t.at) + 4, 'text-anchor': 'end' }, { text: t.label });
  }
  const unit = (/** @type {unknown} */ l, /** @type {unknown} */ u) => str(l) + (str(u) ? ' (' + str(u) + ')' : '');
  const xl = unit(spec.x_label, spec.x_unit);
  const yl = unit(spec.y_label, spec.y_unit);
  if (xl) push(shapes, 'text', 'chart-axis-label', { x: r1((a.left + a.right) / 2), y: a.bottom + 34, 'text-anchor': 'middle' }, { text: xl });
  if (yl) {
    const cx = box.x + 14;
    const cy = r1((a.top + a.bottom) / 2);
    push(shapes, 'text', 'chart-axis-label', { x: cx, y: cy, 'text-anchor': 'middle', transform: `rotate(-90 ${cx} ${cy})` }, { text: yl });
  }
}

/**
 * @param {Shape[]} shapes
 * @param {{left: number, top: number, right: number, bottom: number}} a
 * @param {string[]} names
 */
function legend(shapes, a, names) {
  names.slice(0, 20).forEach((n, i) => {
    const y = a.top + i * 18;
    push(shapes, 'rect', 'chart-legend-key', { x: a.right + 10, y: y, width: 12, height: 10, fill: PALETTE[i % PALETTE.length] });
    push(shapes, 'text', 'chart-legend', { x: a.right + 27, y: y + 9 }, { text: n.length > 14 ? n.slice(0, 13) + '\u2026' : n });
  });
}

/**
 * @typedef {object} Budget
 * @property {number} left points this chart may still draw
 * @property {boolean} cut set when something was left out
 */

// xyChart draws a line or scatter chart.
/**
 * @param {{[k: string]: unknown}} spec
 * @param {Box} box
 * @param {Shape[]} shapes
 * @param {Budget} budget
 */
function xyChart(spec, box, shapes, budget) {
  const line = spec.type === 'line';
  const xScale = str(spec.x_scale) || 'linear';
  const yScale = str(spec.y_scale) || 'linear';
  /** @type {{label: string, pts: {x: number, y: number, xs: string}[]}[]} */
  const series = [];
  /** @type {string[] | undefined} */
  let categories;
  /** @type {Map<string, number>} */
  const catIndex = new Map();
  const raw = Array.isArray(spec.elements) ? spec.elements.slice(0, MAX_SERIES) : [];
  // A categorical x axis: strings that are not dates (or the figure says so).
  const allPts = raw.flatMap((e) => (isObj(e) && Array.isArray(e.points) ? e.points : []));
  const stringX = allPts.some((p) => Array.isArray(p) && typeof p[0] === 'string');
  const dateX = xScale === 'datetime' || (stringX && allPts.every((p) => !Array.isArray(p) || typeof p[0] !== 'string' || parseDate(p[0]) !== null));
  if (stringX && !dateX) {
    categories = [];
    const labels = Array.isArray(spec.x_tick_labels) ? spec.x_tick_labels : [];
    for (const l of labels) if (typeof l === 'string' && l && !catIndex.has(l)) catIndex.set(l, catIndex.size);
  }
  for (const e of raw) {
    if (!isObj(e) || !Array.isArray(e.points)) continue;
    /** @type {{x: number, y: number, xs: string}[]} */
    const pts = [];
    for (const p of e.points) {
      if (budget.left <= 0) {
        budget.cut = true;
        break;
      }
      if (!Array.isArray(p) || p.length < 2 || !isNum(p[1])) continue;
      let x;
      let xs;
      if (categories) {
        const key = str(p[0]);
        if (!catIndex.has(key)) catIndex.set(key, catIndex.size);
        x = /** @type {number} */ (catIndex.get(key));
        xs = key;
      } else if (dateX) {
        x = isNum(p[0]) ? p[0] : parseDate(p[0]);
        xs = x === null ? '' : fmtDate(x);
      } else {
        x = isNum(p[0]) ? p[0] : null;
        xs = x === null ? '' : fmtNum(x);
      }
      if (x === null) continue;
      pts.push({ x, y: p[1], xs });
      budget.left--;
    }
    series.push({ label: str(e.label), pts });
  }
  if (categories) categories = [...catIndex.keys()];
  const names = series.map((s, i) => s.label || 'series ' + (i + 1));
  const a = plotArea(box, series.length > 1);
  const xa = makeAxis({
    vals: series.flatMap((s) => s.pts.map((p) => p.x)),
    scale: dateX ? 'datetime' : xScale,
    p0: a.left,
    p1: a.right,
    ticks: spec.x_ticks,
    tickLabels: spec.x_tick_labels,
    ...(categories ? { categories } : {})
  });
  const ya = makeAxis({ vals: series.flatMap((s) => s.pts.map((p) => p.y)), scale: yScale, p0: a.bottom, p1: a.top, ticks: spec.y_ticks, tickLabels: spec.y_tick_labels });
  frame(shapes, spec, box, a, xa, ya);
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    const shown = s.pts.filter((p) => xa.ok(p.x) && ya.ok(p.y));
    if (line && shown.length > 1) {
      const pts = shown.map((p) => r1(xa.px(p.x)) + ',' + r1(ya.px(p.y))).join(' ');
      push(shapes, 'polyline', 'chart-line', { points: pts, stroke: color, fill: 'none' });
    }
    const r = line ? (shown.length > 60 ? 2.5 : 3.5) : 4;
    for (const p of shown) {
      push(shapes, 'circle', line ? 'chart-point chart-marker' : 'chart-point', { cx: r1(xa.px(p.x)), cy: r1(ya.px(p.y)), r, fill: color }, { tip: names[i] + ': ' + p.xs + ', ' + fmtNum(p.y) });
    }
  });
  if (series.length > 1) legend(shapes, a, names);
}

// barChart draws grouped bars: one band per label, one bar per group in it.
/**
 * @param {{[k: string]: unknown}} spec
 * @param {Box} box
 * @param {Shape[]} shapes
 * @param {Budget} budget
 */
function barChart(spec, box, shapes, budget) {
  /** @type {{label: string, group: string, value: number}[]} */
  const bars = [];
  for (const e of Array.isArray(spec.elements) ? spec.elements : []) {
    if (budget.left <= 0) {
      budget.cut = true;
      break;
    }
    if (!isObj(e) || !isNum(e.value)) continue;
    bars.push({ label: str(e.label), group: str(e.group), value: /** @type {number} */ (e.value) });
    budget.left--;
  }
  const labels = [...new Set(bars.map((b) => b.label))];
  const groups = [...new Set(bars.map((b) => b.group))].slice(0, MAX_SERIES);
  const a = plotArea(box, groups.length > 1);
  const xa = makeAxis({ vals: [], scale: 'categorical', p0: a.left, p1: a.right, ticks: null, tickLabels: null, categories: labels, band: true });
  const ya = makeAxis({ vals: bars.map((b) => b.value), scale: str(spec.y_scale) || 'linear', p0: a.bottom, p1: a.top, ticks: spec.y_ticks, tickLabels: spec.y_tick_labels, zero: true });
  frame(shapes, spec, box, a, xa, ya);
  const bandW = (a.right - a.left) / Math.max(1, labels.length);
  const barW = (bandW * 0.8) / Math.max(1, groups.length);
  const base = ya.ok(0) ? ya.px(0) : a.bottom;
  for (const b of bars) {
    const gi = groups.indexOf(b.group);
    if (gi < 0 || !ya.ok(b.value)) continue;
    const li = labels.indexOf(b.label);
    const x = xa.px(li) - bandW * 0.4 + gi * barW;
    const y = ya.px(b.value);
    const tip = (b.group && groups.length > 1 ? b.group + ', ' : '') + (b.label || '(no label)') + ': ' + fmtNum(b.value);
    push(shapes, 'rect', 'chart-bar', { x: r1(x), y: r1(Math.min(y, base)), width: r1(Math.max(1, barW - 1)), height: r1(Math.max(1, Math.abs(base - y))), fill: PALETTE[gi % PALETTE.length] }, { tip });
  }
  if (groups.length > 1) legend(shapes, a, groups.map((g, i) => g || 'group ' + (i + 1)));
}

// pieChart draws wedges of the given angles (degrees), clockwise from the top.
/**
 * @param {{[k: string]: unknown}} spec
 * @param {Box} box
 * @param {Shape[]} shapes
 * @param {Budget} budget
 */
function pieChart(spec, box, shapes, budget) {
  frame(shapes, spec, box, plotArea(box, false), null, null);
  /** @type {{label: string, angle: number, radius: number}[]} */
  const wedges = [];
  for (const e of Array.isArray(spec.elements) ? spec.elements : []) {
    if (budget.left <= 0) {
      budget.cut = true;
      break;
    }
    if (!isObj(e) || !isNum(e.angle) || /** @type {number} */ (e.angle) <= 0) continue;
    wedges.push({ label: str(e.label), angle: /** @type {number} */ (e.angle), radius: isNum(e.radius) && /** @type {number} */ (e.radius) > 0 ? /** @type {number} */ (e.radius) : 1 });
    budget.left--;
  }
  const total = wedges.reduce((s, w) => s + w.angle, 0);
  const scale = total > 360 ? 360 / total : 1;
  const maxR = Math.max(1, ...wedges.map((w) => w.radius));
  const legendW = 130;
  const R = Math.max(10, Math.min(box.w - legendW - 30, box.h - 50) / 2);
  const cx = box.x + (box.w - legendW) / 2;
  const cy = box.y + 28 + R;
  let start = -90;
  wedges.forEach((w, i) => {
    const sweep = w.angle * scale;
    const r = (R * w.radius) / maxR;
    const color = PALETTE[i % PALETTE.length];
    const tip = (w.label || 'wedge ' + (i + 1)) + ': ' + fmtNum((w.angle / 360) * 100) + '% (' + fmtNum(w.angle) + '\u00b0)';
    if (sweep >= 359.999) {
      push(shapes, 'circle', 'chart-wedge', { cx: r1(cx), cy: r1(cy), r: r1(r), fill: color }, { tip });
    } else {
      const rad = (/** @type {number} */ d) => (d * Math.PI) / 180;
      const x0 = cx + r * Math.cos(rad(start));
      const y0 = cy + r * Math.sin(rad(start));
      const x1 = cx + r * Math.cos(rad(start + sweep));
      const y1 = cy + r * Math.sin(rad(start + sweep));
      const d = `M${r1(cx)},${r1(cy)} L${r1(x0)},${r1(y0)} A${r1(r)},${r1(r)} 0 ${sweep > 180 ? 1 : 0} 1 ${r1(x1)},${r1(y1)} Z`;
      push(shapes, 'path', 'chart-wedge', { d, fill: color }, { tip });
    }
    start += sweep;
  });
  const a = { left: 0, top: box.y + 30, right: box.x + box.w - legendW, bottom: 0 };
  legend(shapes, a, wedges.map((w, i) => w.label || 'wedge ' + (i + 1)));
}

// boxChart draws one box-and-whisker per element, with its outliers.
/**
 * @param {{[k: string]: unknown}} spec
 * @param {Box} box
 * @param {Shape[]} shapes
 * @param {Budget} budget
 */
function boxChart(spec, box, shapes, budget) {
  const keys = /** @type {const} */ (['min', 'first_quartile', 'median', 'third_quartile', 'max']);
  /** @type {{label: string, v: number[], outliers: number[]}[]} */
  const boxes = [];
  for (const e of Array.isArray(spec.elements) ? spec.elements : []) {
    if (budget.left <= 0) {
      budget.cut = true;
      break;
    }
    if (!isObj(e) || !keys.every((k) => isNum(e[k]))) continue;
    const outliers = (Array.isArray(e.outliers) ? e.outliers : []).filter(isNum).slice(0, 1000);
    boxes.push({ label: str(e.label), v: keys.map((k) => /** @type {number} */ (e[k])), outliers: /** @type {number[]} */ (outliers) });
    budget.left -= 1 + outliers.length;
  }
  const labels = boxes.map((b, i) => b.label || String(i + 1));
  const a = plotArea(box, false);
  const xa = makeAxis({ vals: [], scale: 'categorical', p0: a.left, p1: a.right, ticks: null, tickLabels: null, categories: labels, band: true });
  const ya = makeAxis({ vals: boxes.flatMap((b) => [...b.v, ...b.outliers]), scale: str(spec.y_scale) || 'linear', p0: a.bottom, p1: a.top, ticks: spec.y_ticks, tickLabels: spec.y_tick_labels });
  frame(shapes, spec, box, a, xa, ya);
  const bandW = (a.right - a.left) / Math.max(1, boxes.length);
  const w = Math.min(60, bandW * 0.5);
  boxes.forEach((b, i) => {
    if (!b.v.every(ya.ok)) return;
    const cx = xa.px(i);
    const [mn, q1, md, q3, mx] = b.v.map(ya.px);
    const color = PALETTE[i % PALETTE.length];
    const tip = labels[i] + ': min ' + b.v.map(fmtNum).map((s, k) => (k ? ['', 'Q1 ', 'median ', 'Q3 ', 'max '][k] + s : s)).join(', ');
    push(shapes, 'line', 'chart-whisker', { x1: r1(cx), y1: r1(mn), x2: r1(cx), y2: r1(q1), stroke: color });
    push(shapes, 'line', 'chart-whisker', { x1: r1(cx), y1: r1(q3), x2: r1(cx), y2: r1(mx), stroke: color });
    push(shapes, 'line', 'chart-whisker', { x1: r1(cx - w / 4), y1: r1(mn), x2: r1(cx + w / 4), y2: r1(mn), stroke: color });
    push(shapes, 'line', 'chart-whisker', { x1: r1(cx - w / 4), y1: r1(mx), x2: r1(cx + w / 4), y2: r1(mx), stroke: color });
    push(shapes, 'rect', 'chart-box', { x: r1(cx - w / 2), y: r1(Math.min(q1, q3)), width: r1(w), height: r1(Math.max(1, Math.abs(q1 - q3))), stroke: color }, { tip });
    push(shapes, 'line', 'chart-median', { x1: r1(cx - w / 2), y1: r1(md), x2: r1(cx + w / 2), y2: r1(md), stroke: color });
    for (const o of b.outliers) {
      if (ya.ok(o)) push(shapes, 'circle', 'chart-point chart-outlier', { cx: r1(cx), cy: r1(ya.px(o)), r: 3, stroke: color }, { tip: labels[i] + ' outlier: ' + fmtNum(o) });
    }
  });
}

/**
 * @param {{[k: string]: unknown}} spec
 * @param {Box} box
 * @param {Shape[]} shapes
 * @param {Budget} budget
 * @returns {boolean} whether the type was drawn
 */
function draw(spec, box, shapes, budget) {
  switch (spec.type) {
    case 'line':
    case 'scatter':
      xyChart(spec, box, shapes, budget);
      return true;
    case 'bar':
      barChart(spec, box, shapes, budget);
      return true;
    case 'pie':
      pieChart(spec, box, shapes, budget);
      return true;
    case 'box_and_whisker':
      boxChart(spec, box, shapes, budget);
      return true;
    default:
      return false;
  }
}

// chartModel lays out the chart of the JSON spec, or returns null when its
// type is not one this page draws (unknown, missing, malformed): the caller
// then shows the PNG alone.
/**
 * @param {unknown} spec
 * @returns {ChartModel | null}
 */
export function chartModel(spec) {
  if (!isObj(spec) || typeof spec.type !== 'string' || !CHART_TYPES.includes(spec.type)) return null;
  /** @type {Shape[]} */
  const shapes = [];
  /** @type {Budget} */
  const budget = { left: MAX_POINTS, cut: false };
  if (spec.type !== 'superchart') {
    draw(spec, { x: 0, y: 0, w: CHART_W, h: CHART_H }, shapes, budget);
    return { width: CHART_W, height: CHART_H, shapes, type: spec.type, truncated: budget.cut || spec.truncated === true };
  }
  const subs = (Array.isArray(spec.elements) ? spec.elements : []).filter((e) => isObj(e) && e.type !== 'superchart' && CHART_TYPES.includes(/** @type {string} */ (e.type)));
  if (!subs.length) return null;
  const shown = subs.slice(0, MAX_SUBCHARTS);
  const cols = Math.ceil(Math.sqrt(shown.length));
  const rows = Math.ceil(shown.length / cols);
  const top = str(spec.title) ? 26 : 0;
  if (top) push(shapes, 'text', 'chart-title chart-suptitle', { x: r1((cols * CELL_W) / 2), y: 18, 'text-anchor': 'middle' }, { text: str(spec.title) });
  shown.forEach((sub, i) => {
    const box = { x: (i % cols) * CELL_W, y: top + Math.floor(i / cols) * CELL_H, w: CELL_W, h: CELL_H };
    draw(/** @type {{[k: string]: unknown}} */ (sub), box, shapes, budget);
  });
  return { width: cols * CELL_W, height: top + rows * CELL_H, shapes, type: 'superchart', truncated: budget.cut || subs.length > shown.length || spec.truncated === true };
}

const SVG_NS = 'http://www.w3.org/2000/svg';

// renderChart builds the interactive chart of spec: an element holding the
// <svg> and a tooltip that shows the hover text of the element under the
// pointer. Returns null for a type chartModel does not draw.
/**
 * @param {unknown} spec
 * @returns {HTMLElement | null}
 */
export function renderChart(spec) {
  const model = chartModel(spec);
  if (!model) return null;
  const box = document.createElement('div');
  box.className = 'chart-view';
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('class', 'chart-svg chart-type-' + model.type);
  svg.setAttribute('viewBox', `0 0 ${model.width} ${model.height}`);
  svg.setAttribute('width', String(model.width));
  svg.setAttribute('role', 'img');
  const title = isObj(spec) ? str(spec.title) : '';
  svg.setAttribute('aria-label', (title || 'chart') + ' (' + model.type.replace(/_/g, ' ') + ')');
  for (const s of model.shapes) {
    const e = document.createElementNS(SVG_NS, s.tag);
    e.setAttribute('class', s.cls);
    for (const [k, v] of Object.entries(s.attrs)) e.setAttribute(k, String(v));
    if (s.text !== undefined) e.textContent = s.text;
    if (s.tip !== undefined) e.setAttribute('data-tip', s.tip);
    svg.appendChild(e);
  }
  box.appendChild(svg);
  const tip = document.createElement('div');
  tip.className = 'chart-tip';
  tip.hidden = true;
  tip.setAttribute('role', 'tooltip');
  box.appendChild(tip);
  /** @type {Element | null} */
  let hot = null;
  svg.addEventListener('pointermove', (ev) => {
    const t = ev.target instanceof Element && ev.target.hasAttribute('data-tip') ? ev.target : null;
    if (hot !== t) {
      if (hot) hot.classList.remove('hot');
      hot = t;
      if (hot) hot.classList.add('hot');
    }
    if (!t) {
      tip.hidden = true;
      return;
    }
    tip.textContent = t.getAttribute('data-tip');
    tip.hidden = false;
    const r = box.getBoundingClientRect();
    tip.style.left = Math.round(ev.clientX - r.left + 12) + 'px';
    tip.style.top = Math.round(ev.clientY - r.top + 12) + 'px';
  });
  svg.addEventListener('pointerleave', () => {
    if (hot) hot.classList.remove('hot');
    hot = null;
    tip.hidden = true;
  });
  if (model.truncated) box.appendChild(Object.assign(document.createElement('div'), { className: 'chart-note', textContent: 'Only part of the data is drawn.' }));
  return box;
}
