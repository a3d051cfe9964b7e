import { test } from 'node:test';
import assert from 'node:assert/strict';
import { helpBundle, helpSubject, nextInput } from '../static/js/pager.js';

test('helpBundle keeps the text representations the pane shows', () => {
  // IPython pages len? as ANSI-coloured text/plain.
  const text = '\x1b[0;31mSignature:\x1b[0m \x1b[0mlen\x1b[0m\x1b[0;34m(\x1b[0m\x1b[0mobj\x1b[0m\x1b[0;34m,\x1b[0m \x1b[0;34m/\x1b[0m\x1b[0;34m)\x1b[0m\x1b[0;34m\x1b[0m\x1b[0;34m\x1b[0m\x1b[0m\n\x1b[0;31mDocstring:\x1b[0m Return the number of items in a container.';
  assert.deepEqual(helpBundle({ 'text/plain': text }), { 'text/plain': text });
  assert.deepEqual(helpBundle({ 'text/html': ['<b>len</b>\n', '(obj)'], 'text/plain': 'len(obj)', 'image/png': 'iVBOR' }), {
    'text/html': '<b>len</b>\n(obj)',
    'text/plain': 'len(obj)'
  });
  assert.deepEqual(helpBundle({ 'text/markdown': '# len' }), { 'text/markdown': '# len' });
});

test('helpBundle drops what is not text and answers null when nothing is left', () => {
  for (const bad of [null, undefined, 'len', 42, [], ['text/plain'], {}, { 'text/plain': 7 }, { 'text/plain': ['a', 1] }, { 'text/plain': '  \n' }, { 'image/png': 'iVBOR' }]) {
    assert.equal(helpBundle(bad), null, JSON.stringify(bad));
  }
  assert.deepEqual(helpBundle({ 'text/html': { toString: 'x' }, 'text/plain': 'ok' }), { 'text/plain': 'ok' });
});

test('helpSubject names the object a cell asked help for', () => {
  assert.equal(helpSubject('len?'), 'len');
  assert.equal(helpSubject('len??'), 'len');
  assert.equal(helpSubject('  ?len  '), 'len');
  assert.equal(helpSubject('??os.path.join'), 'os.path.join');
  assert.equal(helpSubject('import os\nos.path?'), 'os.path');
  assert.equal(helpSubject('%pinfo2 np.zeros'), 'np.zeros');
  assert.equal(helpSubject('%pdoc str'), 'str');
  assert.equal(helpSubject('df.head()?'), 'df.head()');
  assert.equal(helpSubject("d['k']?"), "d['k']");
  assert.equal(helpSubject('x = 1'), '');
  assert.equal(helpSubject('what is this?? really'), '');
  assert.equal(helpSubject(''), '');
});

test('nextInput reads set_next_input defensively', () => {
  assert.deepEqual(nextInput({ type: 'set_next_input', id: 'a', text: 'x = 1\n', replace: true }), { text: 'x = 1\n', replace: true });
  assert.deepEqual(nextInput({ type: 'set_next_input', id: 'a', text: '' }), { text: '', replace: false });
  assert.deepEqual(nextInput({ type: 'set_next_input', text: 'y', replace: 'yes' }), { text: 'y', replace: false });
  assert.equal(nextInput({ type: 'set_next_input', text: 5 }), null);
  assert.equal(nextInput({ type: 'set_next_input' }), null);
});
