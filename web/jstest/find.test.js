import { test } from 'node:test';
import assert from 'node:assert/strict';
import { occurrences } from '../static/js/find.js';

test('occurrences finds every match, case-insensitively, without overlaps', () => {
  assert.deepEqual(occurrences('Print(x); print(y)', 'print', 10), [0, 10]);
  assert.deepEqual(occurrences('aaaa', 'aa', 10), [0, 2]);
  assert.deepEqual(occurrences('abc', 'x', 10), []);
});

test('occurrences stops at the room given and finds nothing for an empty needle', () => {
  assert.deepEqual(occurrences('a a a a', 'a', 2), [0, 2]);
  assert.deepEqual(occurrences('abc', '', 10), []);
});

test('occurrences keeps offsets right when lower-casing changes the length', () => {
  // U+0130 lower-cases to two code units: the text is searched as it is.
  const text = '\u0130x print';
  const at = occurrences(text, 'print', 10);
  assert.deepEqual(at, [3]);
  assert.equal(text.slice(at[0], at[0] + 5), 'print');
});
