// @ts-check
// Sortable tables from application/vnd.glassroom.dataframe+json (a pandas
// DataFrame as columns of JSON values, bounded by the kernel, with a note
// when it was cut).
//
// readFrame checks and normalises the JSON, sortOrder and cellText are
// pure (unit-tested); renderTable builds the <table> with createElement and
// textContent only. Clicking a column's header sorts the rows by it,
// ascending then descending: numbers numerically, text naturally, nulls
// last either way.

export const DATAFRAME_MIME = 'application/vnd.glassroom.dataframe+json';

// Bounds on what one table shows, whatever the JSON holds.
const MAX_ROWS = 5000;
const MAX_COLUMNS = 200;
const MAX_CELL = 500; // characters of a cell shown

/**
 * A DataFrame as this page shows it: the index is column 0 of cols.
 * @typedef {object} Frame
 * @property {{name: string, dtype: string, values: unknown[], index: boolean}[]} cols
 * @property {number} rows
 * @property {string} note what was left out, '' when nothing
 */

/**
 * @param {unknown} v
 * @returns {v is {[k: string]: unknown}}
 */
function isObj(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// readFrame returns the frame of the JSON, or null when it is not the
// contract's shape (then the caller falls back to text/html).
/**
 * @param {unknown} j
 * @returns {Frame | null}
 */
export function readFrame(j) {
  if (!isObj(j) || !Array.isArray(j.columns) || !isObj(j.data)) return null;
  const data = j.data;
  const dtypes = isObj(j.dtypes) ? j.dtypes : {};
  const names = j.columns.slice(0, MAX_COLUMNS).map((c) => (typeof c === 'string' ? c : JSON.stringify(c) ?? ''));
  /** @type {Frame['cols']} */
  const cols = [];
  let rows = 0;
  for (const name of names) {
    const vals = Object.prototype.hasOwnProperty.call(data, name) ? data[name] : null;
    if (!Array.isArray(vals)) return null;
    rows = Math.max(rows, vals.length);
    const dt = Object.prototype.hasOwnProperty.call(dtypes, name) ? dtypes[name] : '';
    cols.push({ name, dtype: typeof dt === 'string' ? dt : '', values: vals, index: false });
  }
  const idx = isObj(j.index) ? j.index : null;
  const idxVals = idx && Array.isArray(idx.values) ? idx.values : null;
  if (idxVals) rows = Math.max(rows, idxVals.length);
  const cut = rows > MAX_ROWS;
  rows = Math.min(rows, MAX_ROWS);
  if (idxVals) {
    const name = idx && typeof idx.name === 'string' ? idx.name : '';
    cols.unshift({ name, dtype: '', values: idxVals, index: true });
  }
  let note = typeof j.note === 'string' ? j.note.slice(0, 300) : '';
  if (!note && j.truncated === true) {
    const tr = typeof j.total_rows === 'number' ? j.total_rows : null;
    const tc = typeof j.total_columns === 'number' ? j.total_columns : null;
    note = 'Truncated: ' + rows + (tr !== null ? ' of ' + tr : '') + ' rows, ' + names.length + (tc !== null ? ' of ' + tc : '') + ' columns shown';
  }
  if (cut || j.columns.length > MAX_COLUMNS) note = (note ? note + '; ' : '') + 'this page shows ' + rows + ' rows and ' + names.length + ' columns';
  return { cols, rows, note };
}

// rank orders kinds of values: numbers, then booleans, then text, then
// anything else; nulls are handled apart (always last).
/** @param {unknown} v */
function kind(v) {
  if (typeof v === 'number') return 0;
  if (typeof v === 'boolean') return 1;
  if (typeof v === 'string') return 2;
  return 3;
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/**
 * @param {unknown} a non-null
 * @param {unknown} b non-null
 */
function compare(a, b) {
  const ka = kind(a);
  const kb = kind(b);
  if (ka !== kb) return ka - kb;
  if (ka === 0 || ka === 1) return Number(a) - Number(b);
  if (ka === 2) return collator.compare(/** @type {string} */ (a), /** @type {string} */ (b));
  return collator.compare(JSON.stringify(a) ?? '', JSON.stringify(b) ?? '');
}

// sortOrder returns the row numbers 0..n-1 ordered by values (asc or
// desc): numbers numerically, text naturally ("a2" before "a10"), nulls
// (and missing values) last in both directions; ties keep their order.
/**
 * @param {unknown[]} values
 * @param {number} n rows
 * @param {'asc' | 'desc'} dir
 * @returns {number[]}
 */
export function sortOrder(values, n, dir) {
  const sign = dir === 'desc' ? -1 : 1;
  const order = Array.from({ length: n }, (_, i) => i);
  return order.sort((i, j) => {
    const a = values[i];
    const b = values[j];
    const na = a === null || a === undefined;
    const nb = b === null || b === undefined;
    if (na || nb) return na === nb ? i - j : na ? 1 : -1;
    return sign * compare(a, b) || i - j;
  });
}

// cellText is how a value is shown: null as pandas shows a missing value of
// the column's dtype (NaN, NaT, None), objects as JSON.
/**
 * @param {unknown} v
 * @param {string} dtype
 * @returns {string}
 */
export function cellText(v, dtype) {
  if (v === null || v === undefined) {
    if (/^(float|int|uint|Float|Int|UInt|complex)/.test(dtype)) return 'NaN';
    if (/^(datetime|timedelta|period)/.test(dtype)) return 'NaT';
    return dtype ? 'None' : '';
  }
  const s = typeof v === 'string' ? v : JSON.stringify(v) ?? String(v);
  return s.length > MAX_CELL ? s.slice(0, MAX_CELL - 1) + '\u2026' : s;
}

/** @param {string} dtype */
function numeric(dtype) {
  return /^(float|int|uint|Float|Int|UInt|complex)/.test(dtype);
}

// renderTable builds the sortable table of the JSON, or returns null when
// the JSON is not a DataFrame's.
/**
 * @param {unknown} json
 * @returns {HTMLElement | null}
 */
export function renderTable(json) {
  const read = readFrame(json);
  if (!read) return null;
  const f = read;
  const box = document.createElement('div');
  box.className = 'df-view';
  const scroll = document.createElement('div');
  scroll.className = 'df-scroll';
  const table = document.createElement('table');
  table.className = 'df-table';
  const thead = document.createElement('thead');
  const hr = document.createElement('tr');
  /** @type {HTMLTableCellElement[]} */
  const heads = [];
  f.cols.forEach((c, ci) => {
    const th = document.createElement('th');
    th.scope = 'col';
    if (c.index) th.className = 'df-index';
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'df-sort';
    b.textContent = c.name;
    b.title = 'Sort by ' + (c.name || 'the index') + (c.dtype ? ' (' + c.dtype + ')' : '');
    b.addEventListener('click', () => sortBy(ci));
    th.appendChild(b);
    th.setAttribute('aria-sort', 'none');
    heads.push(th);
    hr.appendChild(th);
  });
  thead.appendChild(hr);
  table.appendChild(thead);
  const tbody = document.createElement('tbody');
  /** @type {HTMLTableRowElement[]} */
  const rows = [];
  for (let r = 0; r < f.rows; r++) {
    const tr = document.createElement('tr');
    for (const c of f.cols) {
      const v = c.values[r];
      const td = document.createElement(c.index ? 'th' : 'td');
      if (c.index) td.setAttribute('scope', 'row');
      const missing = v === null || v === undefined;
      td.className = (c.index ? 'df-index' : '') + (missing ? ' df-null' : typeof v === 'number' || numeric(c.dtype) ? ' df-num' : '');
      td.textContent = cellText(v, c.dtype);
      tr.appendChild(td);
    }
    rows.push(tr);
    tbody.appendChild(tr);
  }
  table.appendChild(tbody);
  scroll.appendChild(table);
  box.appendChild(scroll);
  const foot = document.createElement('div');
  foot.className = 'df-foot';
  foot.textContent = f.rows + ' row' + (f.rows === 1 ? '' : 's') + ' \u00d7 ' + f.cols.filter((c) => !c.index).length + ' columns' + (f.note ? ' \u2014 ' + f.note : '');
  if (f.note) foot.classList.add('df-truncated');
  box.appendChild(foot);

  let sorted = -1;
  /** @type {'asc' | 'desc'} */
  let dir = 'asc';
  /** @param {number} ci */
  function sortBy(ci) {
    dir = sorted === ci && dir === 'asc' ? 'desc' : 'asc';
    sorted = ci;
    heads.forEach((th, i) => th.setAttribute('aria-sort', i === ci ? (dir === 'asc' ? 'ascending' : 'descending') : 'none'));
    const col = f.cols[ci];
    if (!col) return;
    for (const i of sortOrder(col.values, f.rows, dir)) {
      const tr = rows[i];
      if (tr) tbody.appendChild(tr);
    }
  }
  return box;
}
