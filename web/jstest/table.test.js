import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cellText, readFrame, sortOrder } from '../static/js/table.js';

// A DataFrame as the kernel sends it (application/vnd.glassroom.dataframe+json).
const df = JSON.parse(readFileSync(new URL('./testdata/dataframe.json', import.meta.url), 'utf8'));

const col = (f, name) => f.cols.find((c) => c.name === name);
const sorted = (f, name, dir) => sortOrder(col(f, name).values, f.rows, dir).map((i) => col(f, 'city').values[i]);

test('readFrame: the index first, then the columns in order, with dtypes and the note', () => {
  const f = readFrame(df);
  assert.deepEqual(f.cols.map((c) => c.name), ['id', 'city', 'pop', 'area', 'founded']);
  assert.equal(f.cols[0].index, true);
  assert.equal(col(f, 'pop').dtype, 'float64');
  assert.equal(f.rows, 5);
  assert.equal(f.note, 'first 5 of 25000 rows');
});

test('numbers sort numerically (not as text), nulls last both ways', () => {
  const f = readFrame(df);
  // As text, 10000000 would come first.
  assert.deepEqual(sorted(f, 'pop', 'asc'), ['Bern', 'Oslo', 'Nairobi', 'Lima', 'Ghost']);
  assert.deepEqual(sorted(f, 'pop', 'desc'), ['Lima', 'Nairobi', 'Oslo', 'Bern', 'Ghost']);
  assert.deepEqual(sorted(f, 'area', 'asc'), ['Bern', 'Oslo', 'Nairobi', 'Lima', 'Ghost']);
});

test('text sorts naturally and case-insensitively; dates as ISO strings sort in time order', () => {
  const f = readFrame(df);
  assert.deepEqual(sorted(f, 'city', 'asc'), ['Bern', 'Ghost', 'Lima', 'Nairobi', 'Oslo']);
  assert.deepEqual(sorted(f, 'city', 'desc'), ['Oslo', 'Nairobi', 'Lima', 'Ghost', 'Bern']);
  assert.deepEqual(sorted(f, 'founded', 'asc'), ['Oslo', 'Bern', 'Lima', 'Nairobi', 'Ghost']);
  assert.deepEqual(sortOrder(['a10', 'a2', 'A1'], 3, 'asc'), [2, 1, 0]);
});

test('the index sorts too, and ties keep their order', () => {
  const f = readFrame(df);
  assert.deepEqual(sortOrder(f.cols[0].values, f.rows, 'desc'), [4, 3, 2, 1, 0]);
  assert.deepEqual(sortOrder([1, 1, 0, 1], 4, 'asc'), [2, 0, 1, 3]);
  assert.deepEqual(sortOrder([1, 1, 0, 1], 4, 'desc'), [0, 1, 3, 2]);
});

test('mixed kinds: numbers, then booleans, then text, then objects; missing values count as null', () => {
  assert.deepEqual(sortOrder(['b', 2, null, true, { a: 1 }, 1], 7, 'asc'), [5, 1, 3, 0, 4, 2, 6]);
});

test('cellText: missing values as pandas shows them for the dtype, objects as JSON, long text cut', () => {
  assert.equal(cellText(null, 'float64'), 'NaN');
  assert.equal(cellText(null, 'Int64'), 'NaN');
  assert.equal(cellText(null, 'datetime64[ns]'), 'NaT');
  assert.equal(cellText(null, 'object'), 'None');
  assert.equal(cellText(1.5, 'float64'), '1.5');
  assert.equal(cellText(true, 'bool'), 'true');
  assert.equal(cellText([1, 'a'], 'object'), '[1,"a"]');
  assert.equal(cellText('<b>x</b>', 'object'), '<b>x</b>');
  assert.equal(cellText('x'.repeat(1000), 'object').length, 500);
});

test('malformed frames give null; a truncated frame without a note gets one', () => {
  assert.equal(readFrame(null), null);
  assert.equal(readFrame({ columns: ['a'], data: {} }), null);
  assert.equal(readFrame({ columns: ['a'], data: { a: 'x' } }), null);
  assert.equal(readFrame({ columns: 'a', data: { a: [] } }), null);
  const f = readFrame({ columns: ['a'], data: { a: [1, 2] }, truncated: true, total_rows: 10, total_columns: 3 });
  assert.equal(f.note, 'Truncated: 2 of 10 rows, 1 of 3 columns shown');
  assert.equal(f.cols.length, 1);
  const proto = readFrame({ columns: ['__proto__'], data: JSON.parse('{"__proto__": [1]}') });
  assert.deepEqual(proto.cols[0].values, [1]);
  const huge = readFrame({ columns: ['a'], data: { a: Array.from({ length: 6000 }, (_, i) => i) } });
  assert.equal(huge.rows, 5000);
  assert.match(huge.note, /shows 5000 rows/);
});
