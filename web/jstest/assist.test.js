import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Superseded, cpIndex, createAssist, utf16Index } from '../static/js/assist.js';

test('code points and UTF-16 offsets convert both ways', () => {
  const s = 'a😀b\u00e9\u{1F600}\u{1F600}c'; // astral characters take two UTF-16 units
  assert.equal(cpIndex(s, 0), 0);
  assert.equal(cpIndex(s, 1), 1);
  assert.equal(cpIndex(s, 3), 2); // after 😀
  assert.equal(cpIndex(s, 4), 3);
  assert.equal(cpIndex(s, s.length), [...s].length);
  assert.equal(cpIndex(s, 2), 1, 'an offset inside a pair counts the pair once');
  assert.equal(cpIndex(s, 99), [...s].length);
  for (let cp = 0; cp <= [...s].length; cp++) assert.equal(cpIndex(s, utf16Index(s, cp)), cp);
  assert.equal(utf16Index(s, 2), 3);
  assert.equal(utf16Index(s, -1), 0);
  assert.equal(utf16Index(s, 99), s.length);
  assert.equal(utf16Index(s, NaN), 0);
  assert.equal(cpIndex('x = "\ud800"', 6), 6, 'a lone surrogate is one code point');
});

function fakes() {
  const sent = [];
  const posted = [];
  const conn = { open: true, isOpen() { return this.open; }, send: (f) => sent.push(f) };
  const request = (method, path, opts) =>
    new Promise((resolve, reject) => {
      posted.push({ method, path, opts, resolve, reject });
      opts.signal.addEventListener('abort', () => reject(new Error('aborted')));
    });
  const store = { session: { id: 's1' }, token: 'k', language: 'r' };
  return { sent, posted, conn, store, assist: createAssist({ store, conn, request }) };
}

test('requests go over the WebSocket and resolve with their reply', async () => {
  const { sent, assist } = fakes();
  const p = assist.complete('import os; os.pa', 16);
  assert.equal(sent.length, 1);
  assert.deepEqual(Object.keys(sent[0]).sort(), ['code', 'cursor_pos', 'id', 'language', 'type']);
  assert.equal(sent[0].language, 'r', "the notebook's language: its kernel answers");
  assert.equal(sent[0].type, 'complete');
  assert.equal(sent[0].cursor_pos, 16);
  assert.ok(assist.waiting('complete'));
  assist.onReply({ type: 'complete_reply', id: sent[0].id, matches: ['path'], cursor_start: 14, cursor_end: 16 });
  assert.deepEqual((await p).matches, ['path']);
  assert.ok(!assist.waiting('complete'));

  const q = assist.inspect('len(', 4, true);
  assert.deepEqual(sent[1], { type: 'inspect', id: sent[1].id, code: 'len(', cursor_pos: 4, detail_level: 1, language: 'r' });
  assist.onReply({ type: 'inspect_reply', id: sent[1].id, found: true, data: { 'text/plain': 'doc' } });
  assert.equal((await q).data['text/plain'], 'doc');
});

test('a newer request supersedes the older one of its kind only', async () => {
  const { sent, assist } = fakes();
  const first = assist.complete('a', 1);
  const help = assist.inspect('a', 1, false);
  const second = assist.complete('ab', 2);
  await assert.rejects(first, Superseded);
  // A late answer to the superseded request is ignored.
  assist.onReply({ type: 'complete_reply', id: sent[0].id, matches: ['old'] });
  assist.onReply({ type: 'complete_reply', id: sent[2].id, matches: ['new'] });
  assert.deepEqual((await second).matches, ['new']);
  assist.cancel('inspect');
  await assert.rejects(help, Superseded);
});

test('rejections and dropped connections fail the request', async () => {
  const { sent, assist } = fakes();
  const p = assist.complete('x', 1);
  assert.equal(assist.onRejected({ type: 'rejected', id: 'exec-1', code: 'queue_full' }), false, 'not ours');
  assert.equal(assist.onRejected({ type: 'rejected', id: sent[0].id, code: 'kernel_dead', message: 'kernel is dead' }), true);
  await assert.rejects(p, /kernel is dead/);
  const q = assist.inspect('x', 1, false);
  assist.dropAll();
  await assert.rejects(q, /connection lost/);
});

test('without a WebSocket it uses REST, and cancels the call when superseded', async () => {
  const { posted, conn, assist } = fakes();
  conn.open = false;
  const p = assist.complete('x', 1);
  assert.equal(posted[0].method, 'POST');
  assert.equal(posted[0].path, '/v1/sessions/s1/complete');
  assert.deepEqual(posted[0].opts.json, { code: 'x', cursor_pos: 1, language: 'r' });
  posted[0].resolve({ matches: ['xyz'], cursor_start: 0, cursor_end: 1 });
  assert.deepEqual((await p).matches, ['xyz']);
  const q = assist.complete('x', 1);
  const r = assist.complete('xy', 2);
  await assert.rejects(q, Superseded);
  assert.ok(posted[1].opts.signal.aborted, 'the superseded HTTP call is aborted');
  posted[2].resolve({ matches: [] });
  assert.deepEqual((await r).matches, []);
});

test('no session, no request', async () => {
  const { store, sent, assist } = fakes();
  store.session = null;
  await assert.rejects(assist.complete('x', 1), /no session/);
  assert.equal(sent.length, 0);
});
