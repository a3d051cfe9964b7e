import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyCR, basename, encPath, fmtClock, fmtElapsed, fmtSize, joinText, randomId, splitLines, utf8ToBase64 } from '../static/js/text.js';

test('joinText joins nbformat line lists and plain line lists', () => {
  assert.equal(joinText(['a\n', 'b\n', 'c']), 'a\nb\nc');
  assert.equal(joinText(['a', 'b']), 'a\nb');
  assert.equal(joinText('x'), 'x');
  assert.equal(joinText(null), '');
  assert.equal(joinText(undefined), '');
  assert.equal(joinText(7), '7');
  assert.equal(joinText({ a: 1 }), '{\n  "a": 1\n}');
});

test('splitLines keeps newlines and is the inverse of joinText', () => {
  assert.deepEqual(splitLines('a\nb\n\nc'), ['a\n', 'b\n', '\n', 'c']);
  assert.deepEqual(splitLines('a\n'), ['a\n']);
  assert.deepEqual(splitLines(''), []);
  for (const s of ['', 'x', 'x\n', '\n\n', 'def f():\n    return 1\n']) assert.equal(joinText(splitLines(s)), s);
});

test('formatting', () => {
  assert.equal(fmtClock(0), '0:00');
  assert.equal(fmtClock(61_000), '1:01');
  assert.equal(fmtClock(3_723_000), '1:02:03');
  assert.equal(fmtClock(-5), '0:00');
  assert.equal(fmtElapsed(1234), '1.2s');
  assert.equal(fmtElapsed(75_000), '1:15');
  assert.equal(fmtSize(12), '12 B');
  assert.equal(fmtSize(1536), '1.5 KB');
  assert.equal(fmtSize(50 * 1024 * 1024), '50 MB');
  assert.equal(fmtSize(NaN), '');
  assert.equal(fmtSize('1'), '');
});

test('paths', () => {
  assert.equal(encPath('a b/c#d/./e?'), 'a%20b/c%23d/e%3F');
  assert.equal(encPath('/x//y/'), 'x/y');
  assert.equal(basename('plots/a.png'), 'a.png');
  assert.equal(basename('dir/'), 'dir');
});

test('carriage returns overwrite the line, as in a terminal', () => {
  assert.equal(applyCR('10%\r50%\r100%\ndone'), '100%\ndone');
  assert.equal(applyCR('a\r\nb'), 'a\nb');
  assert.equal(applyCR('no cr'), 'no cr');
});

test('randomId and base64', () => {
  assert.match(randomId(), /^[0-9a-f-]{36}$/);
  assert.notEqual(randomId(), randomId());
  assert.equal(utf8ToBase64('<svg>é</svg>'), Buffer.from('<svg>é</svg>').toString('base64'));
});
