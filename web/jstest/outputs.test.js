import { test } from 'node:test';
import assert from 'node:assert/strict';
import { estimateHtmlHeight, pickMime, richJson, withoutRich } from '../static/js/outputs.js';

test('pickMime prefers images, then HTML, then text', () => {
  assert.equal(pickMime({ 'text/plain': 'x', 'image/png': 'p', 'text/html': 'h' }), 'image/png');
  assert.equal(pickMime({ 'text/plain': 'x', 'text/html': 'h' }), 'text/html');
  assert.equal(pickMime({ 'text/plain': 'x' }), 'text/plain');
  assert.equal(pickMime({ 'application/vnd.x': 1, 'application/vnd.y+json': {} }), 'application/vnd.y+json');
  assert.equal(pickMime({ 'application/x': 1 }), 'application/x');
  assert.equal(pickMime({}), null);
});

test('estimateHtmlHeight stays within bounds', () => {
  assert.equal(estimateHtmlHeight(''), 40);
  assert.equal(estimateHtmlHeight('<b>hi</b>'), 40);
  assert.equal(estimateHtmlHeight('<table>' + '<tr><td>1</td></tr>'.repeat(5) + '</table>'), 6 * 24 + 16);
  assert.equal(estimateHtmlHeight('<tr>'.repeat(1000)), 480);
});

test('richJson reads a structured output as an object, a JSON string or a list of lines', () => {
  assert.deepEqual(richJson({ type: 'line' }), { type: 'line' });
  assert.deepEqual(richJson('{"type": "bar"}'), { type: 'bar' });
  assert.deepEqual(richJson(['{"type": ', '"pie"}']), { type: 'pie' });
  assert.equal(richJson('{not json'), null);
  assert.equal(richJson(undefined), null);
});

test('withoutRich keeps the usual representations for the plain view', () => {
  const b = { 'application/vnd.glassroom.chart+json': {}, 'application/vnd.glassroom.dataframe+json': {}, 'image/png': 'p', 'text/plain': 't' };
  assert.deepEqual(withoutRich(b), { 'image/png': 'p', 'text/plain': 't' });
  assert.equal(pickMime(withoutRich(b)), 'image/png');
});
