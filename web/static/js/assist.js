// @ts-check
// Kernel help for the editor: completion and inspection requests over the
// WebSocket (REST while it is down). They do not wait in the execution
// queue, but a busy kernel answers only when its cell ends, so a request
// may be pending for a while; a newer request of a kind supersedes the
// older one (the server cancels it and never answers it).
//
// Positions: the Jupyter protocol counts Unicode code points, JavaScript
// strings (and CodeMirror) count UTF-16 units. cpIndex and utf16Index
// convert.
/** @import { CompleteReplyFrame, InspectReplyFrame, RejectedFrame } from '../../types/wire' */

import { sessionPath } from './api.js';

/**
 * @import { Request } from './api.js'
 * @import { JsonObject } from './nbformat.js'
 * @import { Store } from './store.js'
 * @import { Frame } from './ws.js'
 */

/** @typedef {'complete' | 'inspect'} AssistKind */

/**
 * A request waiting for its answer; abort cancels its REST call (null when
 * it went over the WebSocket).
 * @typedef {object} Pending
 * @property {AssistKind} kind
 * @property {(reply: JsonObject) => void} resolve
 * @property {(err: Error) => void} reject
 * @property {AbortController | null} abort
 */

// cpIndex returns how many code points str has before UTF-16 offset pos.
/**
 * @param {string} str
 * @param {number} pos
 * @returns {number}
 */
export function cpIndex(str, pos) {
  let n = 0;
  for (let i = 0; i < pos && i < str.length; i++) {
    const c = str.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < str.length) {
      const d = str.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        if (i + 1 >= pos) break; // pos splits the pair: count it once
        i++;
      }
    }
    n++;
  }
  return n;
}

// utf16Index returns the UTF-16 offset of code point cp in str (clamped to
// 0..str.length).
/**
 * @param {string} str
 * @param {number} cp
 * @returns {number}
 */
export function utf16Index(str, cp) {
  if (!(cp > 0)) return 0;
  let i = 0;
  let n = 0;
  while (i < str.length && n < cp) {
    const c = str.charCodeAt(i);
    const d = str.charCodeAt(i + 1);
    i += c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
    n++;
  }
  return i;
}

// Superseded is the error a request rejects with when a newer one of its
// kind replaced it or it was cancelled.
export class Superseded extends Error {
  constructor() {
    super('superseded');
    this.superseded = true;
  }
}

// createAssist returns the client. deps: store, conn (ws.js), request
// (api.js). Requests go to the kernel of the notebook's language
// (store.language), as its executes do. complete(code, cursor) resolves to {matches, cursor_start,
// cursor_end, types?}; inspect(code, cursor, detail) to {found, data,
// metadata}; cursors in code points. Both reject with Superseded or an
// Error with the server's message.
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {{isOpen: () => boolean, send: (frame: Frame) => void}} deps.conn
 * @param {Request} deps.request
 */
export function createAssist({ store, conn, request }) {
  /** @type {Map<string, Pending>} request id -> the request */
  const pending = new Map();
  /** @type {{[kind in AssistKind]?: string}} kind -> request id */
  const latest = {};
  let counter = 0;

  /**
   * settle answers request id with value; false when it no longer waits.
   * @overload
   * @param {string} id
   * @param {'resolve'} fn
   * @param {JsonObject} value
   * @returns {boolean}
   */
  /**
   * @overload
   * @param {string} id
   * @param {'reject'} fn
   * @param {Error} value
   * @returns {boolean}
   */
  /**
   * @param {string} id
   * @param {'resolve' | 'reject'} fn
   * @param {any} value
   * @returns {boolean}
   */
  function settle(id, fn, value) {
    const p = pending.get(id);
    if (!p) return false;
    pending.delete(id);
    if (latest[p.kind] === id) delete latest[p.kind];
    if (p.abort) p.abort.abort();
    fn === 'resolve' ? p.resolve(value) : p.reject(value);
    return true;
  }

  /** @param {AssistKind} kind */
  function cancel(kind) {
    const id = latest[kind];
    if (id) settle(id, 'reject', new Superseded());
  }

  /**
   * @param {AssistKind} kind
   * @param {JsonObject} body
   * @returns {Promise<JsonObject>}
   */
  function call(kind, body) {
    cancel(kind);
    if (!store.session) return Promise.reject(new Error('no session'));
    const id = 'assist-' + kind + '-' + ++counter;
    latest[kind] = id;
    const session = store.session;
    return new Promise((resolve, reject) => {
      /** @type {Pending} */
      const p = { kind, resolve, reject, abort: null };
      pending.set(id, p);
      if (conn.isOpen()) {
        conn.send(Object.assign({ type: kind, id }, body));
        return;
      }
      const abort = new AbortController();
      p.abort = abort;
      request('POST', sessionPath(session.id, '/' + kind), { json: body, signal: abort.signal }).then(
        (r) => settle(id, 'resolve', r || {}),
        (e) => settle(id, 'reject', e)
      );
    });
  }

  return {
    /** @type {(code: string, cursor: number) => Promise<JsonObject>} */
    complete: (code, cursor) => call('complete', { code, cursor_pos: cursor, language: store.language }),
    /** @type {(code: string, cursor: number, detail: boolean) => Promise<JsonObject>} */
    inspect: (code, cursor, detail) => call('inspect', { code, cursor_pos: cursor, detail_level: detail ? 1 : 0, language: store.language }),
    cancel,
    // waiting says whether a request of kind waits for an answer.
    waiting: (/** @type {AssistKind} */ kind) => !!latest[kind],
    // onReply takes a complete_reply or inspect_reply frame.
    /** @param {CompleteReplyFrame | InspectReplyFrame} ev */
    onReply(ev) {
      settle(String(ev.id), 'resolve', ev);
    },
    // onRejected takes a rejected frame; it reports whether the frame was
    // about one of these requests.
    /**
     * @param {RejectedFrame} ev
     * @returns {boolean}
     */
    onRejected(ev) {
      const id = ev.id != null ? String(ev.id) : '';
      if (!id.startsWith('assist-')) return false;
      settle(id, 'reject', new Error(ev.message || ev.code || 'rejected'));
      return true;
    },
    // dropAll fails every request sent on the WebSocket (it dropped: their
    // answers will never come).
    dropAll() {
      for (const [id, p] of [...pending]) if (!p.abort) settle(id, 'reject', new Error('connection lost'));
    }
  };
}
