import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ansiSegments, xterm256 } from '../static/js/ansi.js';

const plain = (text) => ({ text, classes: [] });

test('plain text is one unstyled segment', () => {
  assert.deepEqual(ansiSegments('hello\nworld\t!'), [plain('hello\nworld\t!')]);
  assert.deepEqual(ansiSegments(''), []);
});

test('SGR colours and styles become classes, reset ends them', () => {
  assert.deepEqual(ansiSegments('\x1b[31mred\x1b[0m plain \x1b[1;4;92mbold\x1b[22m under'), [
    { text: 'red', classes: ['ansi-fg-1'] },
    plain(' plain '),
    { text: 'bold', classes: ['ansi-fg-10', 'ansi-bold', 'ansi-underline'] },
    { text: ' under', classes: ['ansi-fg-10', 'ansi-underline'] }
  ]);
  assert.deepEqual(ansiSegments('\x1b[44;97mx\x1b[39;49my\x1b[mz'), [
    { text: 'x', classes: ['ansi-fg-15', 'ansi-bg-4'] },
    plain('y'),
    plain('z')
  ]);
});

test('256 colours and true colour', () => {
  assert.equal(xterm256(9), 9);
  assert.equal(xterm256(16), 'rgb(0,0,0)');
  assert.equal(xterm256(196), 'rgb(255,0,0)');
  assert.equal(xterm256(232), 'rgb(8,8,8)');
  assert.deepEqual(ansiSegments('\x1b[38;5;9ma\x1b[38;5;196mb\x1b[48;2;1;300;0mc'), [
    { text: 'a', classes: ['ansi-fg-9'] },
    { text: 'b', classes: [], color: 'rgb(255,0,0)' },
    { text: 'c', classes: [], color: 'rgb(255,0,0)', background: 'rgb(1,255,0)' }
  ]);
  // A malformed extended colour is ignored with the rest of its sequence.
  assert.deepEqual(ansiSegments('\x1b[38;7;1mx'), [plain('x')]);
});

test('a traceback from IPython loses its escapes and keeps its text', () => {
  const tb =
    '\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\n' +
    '\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)\n' +
    'Cell \x1b[0;32mIn[1], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241m1\x1b[39m\x1b[38;5;241m/\x1b[39m\x1b[38;5;241m0\x1b[39m\n';
  const text = ansiSegments(tb).map((s) => s.text).join('');
  assert.ok(!/\x1b|\[0;/.test(text), text);
  assert.match(text, /ZeroDivisionError\s+Traceback/);
  assert.match(text, /----> 1 1\/0/);
});

test('other escape sequences and control characters never show', () => {
  const cases = {
    'a\x1b]0;title\x07b': 'ab', // OSC with BEL
    'a\x1b]8;;http://x\x1b\\b': 'ab', // OSC with ST
    'a\x1b[2Kb\x1b[1Ac': 'abc', // erase line, cursor up
    'a\x1bPdcs\x1b\\b': 'ab', // DCS
    'a\x1b(Bb': 'ab', // charset
    'a\x9b31mb': 'ab', // 8-bit CSI
    'a\x1b[': 'a', // cut off
    'a\x00\x07\x08\x7fb\x1b': 'ab',
    'keep\ttabs\nand lines\r\n': 'keep\ttabs\nand lines\r\n'
  };
  for (const [input, want] of Object.entries(cases)) {
    assert.equal(ansiSegments(input).map((s) => s.text).join(''), want, JSON.stringify(input));
  }
});

test('hostile input ends in linear time and yields only text', () => {
  const s = '\x1b['.repeat(20000) + '\x1b[38;5'.repeat(20000) + 'x';
  const segs = ansiSegments(s);
  assert.ok(segs.every((g) => !/[\x00-\x08\x1b]/.test(g.text)));
});
