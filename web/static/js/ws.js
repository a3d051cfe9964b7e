// @ts-check
// The session's WebSocket: connects, reconnects with backoff, resumes the
// event stream where it left off (no event lost, none handled twice) and
// queues frames sent while it is down.
/** @import { KernelEvent, ServerFrame } from '../../types/wire' */

import { sessionPath } from './api.js';

/** @import { Store } from './store.js' */

/**
 * A frame from the session's WebSocket: one of the frames the gateway
 * writes (web/types/wire.d.ts, generated from the Go wire types: `make
 * generate`), discriminated by its type; seq on events of the stream, id
 * on those about a request. The socket checks only that it is an object.
 * @typedef {ServerFrame} ServerEvent
 */

/**
 * A frame the page sends (execute, input_reply, complete, inspect).
 * @typedef {{type: string, id: string, [field: string]: unknown}} Frame
 */

/**
 * Where a stream was read up to: the last event's seq, where the page's
 * stream began (null before the first snapshot), and the frames not sent.
 * @typedef {{lastSeq: number, floor: number | null, unsent: Frame[]}} StreamPosition
 */

/**
 * @typedef {object} Connection
 * @property {() => void} connect opens the socket of store.session
 * @property {() => void} disconnect closes it without reconnecting
 * @property {() => void} reset disconnects and forgets the stream position and queued frames (a new session)
 * @property {() => StreamPosition} position where the stream was read up to
 * @property {(pos: StreamPosition) => void} resumeAt makes the next connect replay what followed pos (after reset)
 * @property {(frame: Frame) => void} send sends a frame now, or after the next (re)connect
 * @property {() => boolean} isOpen whether the socket is open
 */

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 5000;

// createConnection returns the connection of store.session. Callbacks:
//   onSnapshot(ev)  the kernel-state snapshot the server sends first
//   onEvent(ev)     every later event, once, in order (errors are caught)
//   onOpen()        after each (re)connect, once queued frames are sent
//   onClose(code)   when the socket drops (a reconnect is scheduled), with
//                   the close frame's code (1006: none)
//   checkAlive()    a Promise of whether the session still exists; asked
//                   before each reconnect
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {(ev: KernelEvent) => void} deps.onSnapshot
 * @param {(ev: ServerEvent) => void} deps.onEvent
 * @param {() => void} deps.onOpen
 * @param {(code: number) => void} deps.onClose
 * @param {() => Promise<boolean>} deps.checkAlive
 * @returns {Connection}
 */
export function createConnection({ store, onSnapshot, onEvent, onOpen, onClose, checkAlive }) {
  /** @type {WebSocket | null} */
  let ws = null;
  let open = false;
  let gen = 0; // bumped on every connect and disconnect; stale sockets compare it
  let lastSeq = 0; // seq of the last stream event handled
  /** @type {number | null} */
  let streamFloor = null; // where this page's stream began; null before the first connection
  let backoff = BACKOFF_MIN_MS;
  let reconnectTimer = 0;
  /** @type {Frame[]} */
  let outbox = [];

  function connect() {
    if (!store.session) return;
    clearTimeout(reconnectTimer);
    const myGen = ++gen;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    // The first connection starts at the live end of the stream: older
    // events belong to executions this page does not know. After a drop, ask
    // for every event after the last one handled, so that output produced
    // while disconnected is not lost.
    let url = proto + '//' + location.host + sessionPath(store.session.id, '/ws') + '?token=' + encodeURIComponent(store.token);
    if (streamFloor !== null) url += '&since=' + Math.max(lastSeq, streamFloor);
    let first = true;
    /** @type {WebSocket} */
    let sock;
    try {
      sock = new WebSocket(url);
    } catch (_) {
      scheduleReconnect(myGen);
      return;
    }
    ws = sock;
    sock.onopen = () => {
      if (myGen !== gen) return;
      open = true;
      backoff = BACKOFF_MIN_MS;
      const pending = outbox;
      outbox = [];
      for (const f of pending) sock.send(JSON.stringify(f));
      onOpen();
    };
    sock.onmessage = (m) => {
      if (myGen !== gen || typeof m.data !== 'string') return;
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch (_) {
        return;
      }
      if (first) {
        first = false;
        // The server opens with a snapshot of the kernel state. Its seq is
        // the stream's position when it was taken, not an event of the
        // stream: events up to it may still follow (replayed after a drop),
        // so it must not advance lastSeq or they would be dropped.
        if (ev && !Array.isArray(ev) && ev.type === 'kernel') {
          if (streamFloor === null) streamFloor = typeof ev.seq === 'number' ? ev.seq : 0;
          onSnapshot(ev);
          return;
        }
      }
      if (Array.isArray(ev)) ev.forEach(handle);
      else handle(ev);
    };
    sock.onclose = (e) => {
      if (myGen !== gen) return;
      open = false;
      ws = null;
      onClose(e.code);
      scheduleReconnect(myGen);
    };
    sock.onerror = () => {
      /* onclose follows */
    };
  }

  /** @param {any} ev a parsed JSON value (anything) */
  function handle(ev) {
    if (!ev || typeof ev !== 'object') return;
    if (typeof ev.seq === 'number') {
      if (ev.seq <= lastSeq) return; // duplicate from a replay
      lastSeq = ev.seq;
    }
    try {
      onEvent(ev);
    } catch (e) {
      // A malformed event must not break the stream of later ones.
      console.warn('glassroom: bad event', ev, e);
    }
  }

  /** @param {number} myGen */
  function scheduleReconnect(myGen) {
    if (!store.session || myGen !== gen) return;
    const delay = backoff;
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    clearTimeout(reconnectTimer);
    reconnectTimer = setTimeout(() => {
      if (myGen !== gen || !store.session) return;
      // Make sure the session still exists before hammering the socket.
      checkAlive().then((alive) => {
        if (alive && myGen === gen && store.session) connect();
      });
    }, delay);
  }

  function disconnect() {
    gen++;
    clearTimeout(reconnectTimer);
    const sock = ws;
    ws = null;
    open = false;
    if (sock) {
      sock.onopen = sock.onmessage = sock.onclose = sock.onerror = null;
      try {
        sock.close();
      } catch (_) {
        /* ignore */
      }
    }
  }

  return {
    connect,
    disconnect,
    // reset forgets the stream position and queued frames (a new session).
    reset() {
      disconnect();
      lastSeq = 0;
      streamFloor = null;
      backoff = BACKOFF_MIN_MS;
      outbox = [];
    },
    // position is where the stream was read up to; resumeAt, after a
    // reset and before connect, makes the next connection replay what
    // followed it (a notebook coming back to a session it left).
    // Frames not sent yet go along. A stream left before its first
    // snapshot (its start unknown) is replayed from its beginning: the
    // events of executions the page does not know find no cell.
    position: () => ({ lastSeq, floor: streamFloor, unsent: outbox.slice() }),
    resumeAt(pos) {
      lastSeq = pos.lastSeq;
      streamFloor = pos.floor === null ? 0 : pos.floor;
      outbox = pos.unsent.slice();
    },
    // send sends a frame now, or after the next (re)connect.
    send(frame) {
      if (ws && open && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
      else outbox.push(frame);
    },
    isOpen: () => open
  };
}
