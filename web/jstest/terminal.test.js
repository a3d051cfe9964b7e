import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseControl, resizeFrame, terminalUrl } from '../static/js/terminal.js';

test('terminalUrl: same host, ws or wss, the size and the key as the session socket carries it', () => {
  assert.equal(terminalUrl({ protocol: 'http:', host: '127.0.0.1:8080' }, 'abc', 'k&y', 100, 30), 'ws://127.0.0.1:8080/v1/sessions/abc/terminal?cols=100&rows=30&token=k%26y');
  assert.equal(terminalUrl({ protocol: 'https:', host: 'h' }, 'a/b', '', 0, -1), 'wss://h/v1/sessions/a%2Fb/terminal?cols=80&rows=24');
  assert.match(terminalUrl({ protocol: 'http:', host: 'h' }, 'x', '', 5000, 2.5), /cols=1000&rows=24$/);
});

test('resizeFrame is the contract\'s JSON text frame', () => {
  assert.deepEqual(JSON.parse(resizeFrame(120, 40)), { type: 'resize', cols: 120, rows: 40 });
  assert.deepEqual(JSON.parse(resizeFrame(NaN, 0)), { type: 'resize', cols: 80, rows: 24 });
});

test('parseControl reads the exit frame and ignores anything else', () => {
  assert.deepEqual(parseControl('{"type":"exit","exit_code":130}'), { type: 'exit', exit_code: 130 });
  assert.deepEqual(parseControl('{"type":"exit"}'), { type: 'exit', exit_code: null });
  assert.deepEqual(parseControl('{"type":"exit","exit_code":"1"}'), { type: 'exit', exit_code: null });
  assert.equal(parseControl('{"type":"resize","cols":1}'), null);
  assert.equal(parseControl('not json'), null);
  assert.equal(parseControl('[1]'), null);
  assert.equal(parseControl('null'), null);
});
