import { test } from 'node:test';
import assert from 'node:assert/strict';
import { estimateHtmlHeight, pickMime } from '../static/js/outputs.js';

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
