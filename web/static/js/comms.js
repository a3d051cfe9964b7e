// @ts-check
// The session's comms: Jupyter's comm protocol over the native WebSocket,
// the kernel side of the widget manager (widgets.js). Pure: no DOM, so
// that it is unit-tested in Node against a fake socket.
//
// Server -> page, as WebSocket events:
//   {type: 'comm', msg: {header: {msg_id, msg_type}, parent_header: {msg_id},
//     content, metadata, buffers: [base64...]}, context?}
//   where msg_type is comm_open, comm_msg or comm_close, or an iopub message
//   (stream, display_data, execute_result, error, clear_output,
//   update_display_data, status) whose parent is a comm message the page
//   sent (a widget callback's output, the kernel's busy/idle for it) or an
//   execution;
//   {type: 'comm_info_reply', id, comms: {comm_id: {target_name}}};
//   {type: 'comm_sent', id, msg_id}: a comm frame went to the kernel as
//   msg_id.
// Page -> server, as frames:
//   {type: 'comm', id, msg_type: 'comm_open'|'comm_msg'|'comm_close',
//     content: {comm_id, target_name?, data}, metadata, buffers: [base64...]}
//   {type: 'comm_info', id, target_name}
// The id of a frame is the msg_id the kernel's answers name as parent:
// the gateway sends the message with it (a fresh random id, which no other
// message has), so the page knows the parent before anything names it,
// and comm.send returns it, as ipywidgets needs (it matches its messages'
// idle status, echo_update and request_state answers by it). Should the
// gateway use another msg_id (comm_sent says so), the page names what
// comes for that msg_id by the frame's id from then on. A frame the
// gateway rejects gets the idle status the kernel would have sent, so
// that a widget waiting for it (ipywidgets sends one message at a time)
// goes on.
//
// A comm is an IClassicComm, as @jupyter-widgets/base expects one: comm_id,
// target_name, open, send, close (each returns the message id), on_msg,
// on_close. A comm_open of a target nobody registered yet is kept, with the
// messages of its comm that follow, until the target is registered (the
// widget bundle loads lazily: onTarget asks for it) or dropped.
//
// Messages reach the comms' handlers one at a time, in order, each after
// the promise the last one's handler returned (a target's handler returns
// the model it makes, whose comm handlers exist only then), as
// @jupyterlab/services' kernel connection chains them; settled() is the end
// of that chain.
//
// Output widgets: an Output widget's model holds msg_id, the request whose
// outputs go into it (the kernel sets it inside `with out:`). The layer
// follows msg_id from the comm messages themselves, synchronously and in
// stream order, so that the outputs right after it go to the widget and
// not to the cell: those of an execution (its WebSocket events,
// captureEvent) and those of a comm message's handler (comm frames). The
// kernel's msg_id is the id of the request as the kernel saw it; the comm
// message that sets it has that request as its parent, as the gateway
// names it (the execution's or the frame's id): the layer maps one to the
// other. What it captures goes to the widget's output sink (setOutputSink),
// kept until the model sets one.
/** @import { CommEvent, CommInfoReplyFrame, CommSentFrame, LogEvent, RejectedFrame } from '../../types/wire' */

import { randomId } from './text.js';

/**
 * @import { JsonObject } from './nbformat.js'
 * @import { Frame, ServerEvent } from './ws.js'
 */

/**
 * A Jupyter message of a comm frame, checked: buffers decoded.
 * @typedef {object} CommMessage
 * @property {{msg_id: string, msg_type: string}} header
 * @property {{msg_id: string}} parent_header
 * @property {JsonObject} content
 * @property {JsonObject} metadata
 * @property {DataView[]} buffers
 * @property {string} channel 'shell' for comm messages, 'iopub' for the others
 */

/**
 * Callbacks of a message the page sent (as ipywidgets passes them).
 * @typedef {{iopub?: {output?: (msg: CommMessage) => void, status?: (msg: CommMessage) => void}}} Callbacks
 */

/**
 * Binary buffers as the widgets hand them over.
 * @typedef {(ArrayBuffer | ArrayBufferView)[]} Buffers
 */

/**
 * A comm (ipywidgets' IClassicComm).
 * @typedef {object} Comm
 * @property {string} comm_id
 * @property {string} target_name
 * @property {(data: unknown, callbacks?: Callbacks, metadata?: JsonObject, buffers?: Buffers) => string} open
 * @property {(data: unknown, callbacks?: Callbacks, metadata?: JsonObject, buffers?: Buffers) => string} send
 * @property {(data?: unknown, callbacks?: Callbacks, metadata?: JsonObject, buffers?: Buffers) => string} close
 * @property {(cb: (msg: CommMessage) => void) => void} on_msg
 * @property {(cb: (msg: CommMessage) => void) => void} on_close
 */

/**
 * What an Output widget takes: an nbformat output, or a clear_output.
 * @typedef {{output: JsonObject} | {clear: true, wait: boolean}} SinkItem
 */

/**
 * @typedef {object} Comms
 * @property {(ev: CommEvent | CommSentFrame | CommInfoReplyFrame) => void} handle applies a comm, comm_sent or comm_info_reply event
 * @property {(ev: LogEvent) => boolean} captureEvent gives an execution's output event to the Output widget that captures it; false when none does
 * @property {(ev: RejectedFrame) => boolean} onRejected takes a rejected frame of the layer's (false: not one of its frames)
 * @property {(target: string, handler: ((comm: Comm, msg: CommMessage) => unknown) | null) => void} registerCommTarget sets (null: removes) the handler of comm_opens of target (it may return a promise: later messages wait for it), and gives it those kept for it
 * @property {(target: string) => void} dropTarget forgets the comm_opens kept for target (it will not be registered)
 * @property {(target: string, commId?: string) => Comm} newComm a comm the page opens (call its open) or, with an id the kernel has, re-attaches to
 * @property {(target: string) => Promise<{[commId: string]: {target_name: string}}>} commInfo asks the kernel for its comms of target
 * @property {(commId: string, sink: ((item: SinkItem) => void) | null) => void} setOutputSink where an Output widget's captured outputs go
 * @property {(context: string | null) => void} closeAll closes every comm of context (null: all) as if the kernel closed it (a restart, a new session), and forgets what was pending
 * @property {() => void} connectionLost the socket dropped: messages waiting for their idle get it now (the kernel's, if any, went with the socket), so widgets send on
 * @property {() => number} size how many comms are open (tests)
 * @property {() => Promise<void>} settled resolves once the messages received so far reached their handlers
 */

// Bounds: what a hostile or chatty kernel can make the page keep.
const MAX_KEPT_PER_COMM = 1000; // messages of a comm whose target is loading
const MAX_KEPT_COMMS = 10000; // such comms
const MAX_REQUESTS = 1000; // messages sent, waiting for their idle status
// The largest comm message the gateway takes (its content, metadata and
// buffers; the gateway's MaxCommBytes): a larger one (a FileUpload of
// a bigger file) is not sent, and the page says so.
export const MAX_COMM_BYTES = 8 << 20;
const MAX_ALIASES = 1000; // kernel msg_id -> request id (Output widgets, comm_sent)
const MAX_SINK_QUEUE = 1000; // outputs captured before the widget's model took them

// The iopub messages that are outputs, and how they become nbformat outputs.
const OUTPUT_TYPES = new Set(['stream', 'display_data', 'execute_result', 'error', 'clear_output', 'update_display_data']);

/**
 * isObject reports whether v is a non-null object that is not an array.
 * @param {unknown} v
 * @returns {v is JsonObject}
 */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// base64ToView decodes a base64 buffer; it throws on bad input.
/**
 * @param {string} b64
 * @returns {DataView}
 */
export function base64ToView(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new DataView(bytes.buffer);
}

// bufferToBase64 encodes a buffer the widgets hand over.
/**
 * @param {ArrayBuffer | ArrayBufferView} buf
 * @returns {string}
 */
export function bufferToBase64(buf) {
  const bytes = buf instanceof ArrayBuffer ? new Uint8Array(buf) : new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  let bin = '';
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) bin += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, i + CHUNK)));
  return btoa(bin);
}

// messageBytes is the size the gateway counts of a comm message: its
// content's and metadata's JSON (UTF-8) and its buffers.
/**
 * @param {JsonObject} content
 * @param {JsonObject | undefined} metadata
 * @param {Buffers | undefined} buffers
 * @returns {number}
 */
function messageBytes(content, metadata, buffers) {
  const enc = new TextEncoder();
  let n = enc.encode(JSON.stringify(content)).length + enc.encode(JSON.stringify(metadata || {})).length;
  for (const b of buffers || []) n += b.byteLength;
  return n;
}

/** @param {number} n */
function mebibytes(n) {
  return (n / (1 << 20)).toFixed(1).replace(/\.0$/, '') + ' MiB';
}

// parseMessage checks the msg of a comm event (hostile input) and decodes
// its buffers; null when it is not a message the layer can use.
/**
 * @param {unknown} m
 * @returns {CommMessage | null}
 */
export function parseMessage(m) {
  if (!isObject(m) || !isObject(m.header) || typeof m.header.msg_type !== 'string') return null;
  const type = m.header.msg_type;
  const content = isObject(m.content) ? m.content : {};
  if (type.startsWith('comm_') && typeof content.comm_id !== 'string') return null;
  /** @type {DataView[]} */
  const buffers = [];
  if (m.buffers !== undefined && m.buffers !== null) {
    if (!Array.isArray(m.buffers)) return null;
    for (const b of m.buffers) {
      if (typeof b !== 'string') return null;
      try {
        buffers.push(base64ToView(b));
      } catch {
        return null;
      }
    }
  }
  const parent = isObject(m.parent_header) && typeof m.parent_header.msg_id === 'string' ? m.parent_header.msg_id : '';
  return {
    header: { msg_id: typeof m.header.msg_id === 'string' ? m.header.msg_id : '', msg_type: type },
    parent_header: { msg_id: parent },
    content,
    metadata: isObject(m.metadata) ? m.metadata : {},
    buffers,
    channel: type.startsWith('comm_') ? 'shell' : 'iopub'
  };
}

// sinkItemOfMessage turns an iopub output message into what an Output
// widget takes, or null (update_display_data: not kept by Output widgets).
/**
 * @param {string} type
 * @param {JsonObject} c
 * @returns {SinkItem | null}
 */
export function sinkItemOfMessage(type, c) {
  switch (type) {
    case 'stream':
      return { output: { output_type: 'stream', name: c.name === 'stderr' ? 'stderr' : 'stdout', text: typeof c.text === 'string' ? c.text : '' } };
    case 'display_data':
      return { output: { output_type: 'display_data', data: isObject(c.data) ? c.data : {}, metadata: isObject(c.metadata) ? c.metadata : {} } };
    case 'execute_result':
      return {
        output: {
          output_type: 'execute_result',
          data: isObject(c.data) ? c.data : {},
          metadata: isObject(c.metadata) ? c.metadata : {},
          execution_count: typeof c.execution_count === 'number' ? c.execution_count : null
        }
      };
    case 'error':
      return {
        output: {
          output_type: 'error',
          ename: typeof c.ename === 'string' ? c.ename : 'Error',
          evalue: typeof c.evalue === 'string' ? c.evalue : '',
          traceback: Array.isArray(c.traceback) ? c.traceback.map(String) : []
        }
      };
    case 'clear_output':
      return { clear: true, wait: c.wait === true };
    default:
      return null;
  }
}

// sinkItemOfEvent turns an execution's output event of the WebSocket API
// into what an Output widget takes, or null for other events.
/**
 * @param {ServerEvent} ev
 * @returns {SinkItem | null}
 */
export function sinkItemOfEvent(ev) {
  switch (ev.type) {
    case 'stream':
      return sinkItemOfMessage('stream', ev);
    case 'display':
      return sinkItemOfMessage('display_data', ev);
    case 'result':
      return sinkItemOfMessage('execute_result', ev);
    case 'error':
      return sinkItemOfMessage('error', { ename: ev.name, evalue: ev.value, traceback: ev.traceback });
    case 'clear_output':
      return sinkItemOfMessage('clear_output', ev);
    default:
      return null;
  }
}

// boundedSet adds key -> value to map, dropping the oldest entries past max.
/**
 * @template K, V
 * @param {Map<K, V>} map
 * @param {K} key
 * @param {V} value
 * @param {number} max
 */
function boundedSet(map, key, value, max) {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) {
    const first = map.keys().next();
    if (first.done) break;
    map.delete(first.value);
  }
}

// createComms returns the comm layer of the page. deps:
//   send(frame)        sends a frame on the session's WebSocket (ws.js)
//   onTarget(target)   a comm_open came for a target nobody registered:
//                      true when it will be (the widget bundle loads), so
//                      the open and what follows are kept; false drops it
//   newId()            a frame id (default: a random UUID)
//   refused(text)      tells the user a message of the page's widgets was
//                      not taken (too large, rejected by the gateway)
/**
 * @param {object} deps
 * @param {(frame: Frame) => void} deps.send
 * @param {(target: string) => boolean} deps.onTarget
 * @param {() => string} [deps.newId]
 * @param {(text: string) => void} [deps.refused]
 * @returns {Comms}
 */
export function createComms({ send, onTarget, newId = randomId, refused = () => {} }) {
  /**
   * A comm, with its handlers.
   * @typedef {Comm & {context: string, onMsg: ((msg: CommMessage) => void)[], onClose: ((msg: CommMessage) => void)[], model: string}} CommState
   */
  /** @type {Map<string, CommState>} */
  const comms = new Map();
  /** @type {Map<string, (comm: Comm, msg: CommMessage) => unknown>} */
  const targets = new Map();
  // Deliveries to the handlers, one after the other.
  /** @type {Promise<void>} */
  let chain = Promise.resolve();
  /** @param {() => unknown} step */
  function later(step) {
    chain = chain
      .then(() => step())
      .then(
        () => {},
        (e) => console.warn('glassroom: a comm handler failed:', e)
      );
  }
  // comm_opens waiting for their target, with what came for their comm since.
  /** @type {Map<string, {target: string, context: string, msgs: CommMessage[]}>} */
  const kept = new Map();
  // Frames the page sent, by id, with their callbacks, until their idle.
  /** @type {Map<string, {callbacks: Callbacks | undefined}>} */
  const requests = new Map();
  /** @type {Map<string, {resolve: (v: {[commId: string]: {target_name: string}}) => void, reject: (e: Error) => void, target: string}>} */
  const infos = new Map();
  // Output widgets that capture: comm id -> the msg_id it holds; the last
  // one set last (it captures first, as in JupyterLab).
  /** @type {Map<string, string>} */
  const captures = new Map();
  /** @type {Map<string, string>} */
  const aliases = new Map(); // the kernel's msg_id -> the request id the gateway named
  /** @type {Map<string, string>} */
  const sentAs = new Map(); // a msg_id the gateway sent a frame with -> the frame's id, when they differ
  /** @type {Map<string, (item: SinkItem) => void>} */
  const sinks = new Map();
  /** @type {Map<string, SinkItem[]>} */
  const sinkQueues = new Map();

  // ---- sending

  /**
   * @param {string} msgType
   * @param {JsonObject} content
   * @param {Callbacks | undefined} callbacks
   * @param {JsonObject | undefined} metadata
   * @param {Buffers | undefined} buffers
   * @returns {string} the frame id
   */
  function sendComm(msgType, content, callbacks, metadata, buffers) {
    const id = newId();
    const size = messageBytes(content, metadata, buffers);
    if (size > MAX_COMM_BYTES) {
      refused(`The widget's message is ${mebibytes(size)}, more than the ${mebibytes(MAX_COMM_BYTES)} a comm message may carry; it was not sent.`);
      idleFor(id, callbacks);
      return id;
    }
    boundedSet(requests, id, { callbacks }, MAX_REQUESTS);
    send({
      type: 'comm',
      id,
      msg_type: msgType,
      content,
      metadata: metadata || {},
      buffers: (buffers || []).map(bufferToBase64)
    });
    return id;
  }

  /**
   * @param {string} target
   * @param {string} commId
   * @param {string} context
   * @returns {CommState}
   */
  function makeComm(target, commId, context) {
    /** @type {CommState} */
    const c = {
      comm_id: commId,
      target_name: target,
      context,
      model: '',
      onMsg: [],
      onClose: [],
      open(data, callbacks, metadata, buffers) {
        comms.set(commId, c);
        return sendComm('comm_open', { comm_id: commId, target_name: target, data: data === undefined ? {} : data }, callbacks, metadata, buffers);
      },
      send(data, callbacks, metadata, buffers) {
        return sendComm('comm_msg', { comm_id: commId, data: data === undefined ? {} : data }, callbacks, metadata, buffers);
      },
      close(data, callbacks, metadata, buffers) {
        forget(commId);
        return sendComm('comm_close', { comm_id: commId, data: data === undefined ? {} : data }, callbacks, metadata, buffers);
      },
      on_msg(cb) {
        c.onMsg.push(cb);
      },
      on_close(cb) {
        c.onClose.push(cb);
      }
    };
    comms.set(commId, c);
    return c;
  }

  /** @param {string} commId */
  function forget(commId) {
    comms.delete(commId);
    captures.delete(commId);
    sinkQueues.delete(commId);
  }

  // ---- receiving

  /**
   * follow tracks an Output widget's msg_id from a state it gets (comm_open
   * or an update), synchronously.
   * @param {string} commId
   * @param {CommMessage} msg
   */
  function follow(commId, msg) {
    const data = msg.content.data;
    if (!isObject(data) || !isObject(data.state)) return;
    const state = data.state;
    const c = comms.get(commId);
    const k = kept.get(commId);
    if (typeof state._model_name === 'string' && c) c.model = state._model_name;
    const model = c ? c.model : k && k.msgs.length && isObject(k.msgs[0].content.data) && isObject(k.msgs[0].content.data.state) ? k.msgs[0].content.data.state._model_name : '';
    if (model !== 'OutputModel' || typeof state.msg_id !== 'string') return;
    captures.delete(commId);
    if (!state.msg_id) return;
    captures.set(commId, state.msg_id);
    const parent = msg.parent_header.msg_id;
    if (parent && parent !== state.msg_id) boundedSet(aliases, state.msg_id, parent, MAX_ALIASES);
  }

  /**
   * capture gives item to the Output widget whose msg_id is parent (as the
   * kernel or the gateway names it); false when none holds it.
   * @param {string} parent
   * @param {SinkItem} item
   */
  function capture(parent, item) {
    if (!parent) return false;
    const ids = [...captures.entries()];
    for (let i = ids.length - 1; i >= 0; i--) {
      const [commId, msgId] = ids[i];
      if (msgId !== parent && aliases.get(msgId) !== parent) continue;
      const sink = sinks.get(commId);
      if (sink) {
        sink(item);
      } else {
        let q = sinkQueues.get(commId);
        if (!q) sinkQueues.set(commId, (q = []));
        if (q.length < MAX_SINK_QUEUE) q.push(item);
      }
      return true;
    }
    return false;
  }

  /**
   * @param {CommMessage} msg
   * @param {string} context
   */
  function onCommMessage(msg, context) {
    const type = msg.header.msg_type;
    const commId = String(msg.content.comm_id);
    const k = kept.get(commId);
    if (type === 'comm_open') {
      const target = typeof msg.content.target_name === 'string' ? msg.content.target_name : '';
      const handler = targets.get(target);
      if (handler) {
        const c = makeComm(target, commId, context);
        follow(commId, msg);
        later(() => handler(c, msg));
        return;
      }
      if (kept.size >= MAX_KEPT_COMMS || !onTarget(target)) return;
      kept.set(commId, { target, context, msgs: [msg] });
      follow(commId, msg);
      return;
    }
    if (k) {
      // Its target is loading: keep it in order (a close drops the lot).
      if (type === 'comm_close') {
        kept.delete(commId);
        captures.delete(commId);
        return;
      }
      follow(commId, msg);
      if (k.msgs.length < MAX_KEPT_PER_COMM) k.msgs.push(msg);
      return;
    }
    const c = comms.get(commId);
    if (!c) return; // not a comm of this page (closed, or another kernel's)
    if (type === 'comm_msg') {
      follow(commId, msg);
      later(() => {
        for (const cb of c.onMsg) cb(msg);
      });
    } else if (type === 'comm_close') {
      forget(commId);
      later(() => {
        for (const cb of c.onClose) cb(msg);
      });
    }
  }

  /** @param {CommMessage} msg */
  function onIopub(msg) {
    const type = msg.header.msg_type;
    const parent = msg.parent_header.msg_id;
    const req = parent ? requests.get(parent) : undefined;
    if (OUTPUT_TYPES.has(type)) {
      const item = sinkItemOfMessage(type, msg.content);
      if (item && capture(parent, item)) return;
      const out = req && req.callbacks && req.callbacks.iopub && req.callbacks.iopub.output;
      if (out) later(() => out(msg));
      return;
    }
    if (type === 'status' && req) {
      const st = req.callbacks && req.callbacks.iopub && req.callbacks.iopub.status;
      if (st) later(() => st(msg));
      if (msg.content.execution_state === 'idle') requests.delete(parent);
    }
  }

  /** @param {CommEvent | CommSentFrame | CommInfoReplyFrame} ev */
  function handle(ev) {
    if (ev.type === 'comm_info_reply') {
      const p = infos.get(String(ev.id));
      if (!p) return;
      infos.delete(String(ev.id));
      /** @type {{[commId: string]: {target_name: string}}} */
      const out = {};
      if (isObject(ev.comms)) {
        for (const [id, info] of Object.entries(ev.comms)) {
          if (!isObject(info) || typeof info.target_name !== 'string') continue;
          if (!p.target || info.target_name === p.target) out[id] = { target_name: info.target_name };
        }
      }
      p.resolve(out);
      return;
    }
    if (ev.type === 'comm_sent') {
      const id = String(ev.id);
      if (typeof ev.msg_id === 'string' && ev.msg_id && ev.msg_id !== id && requests.has(id)) boundedSet(sentAs, ev.msg_id, id, MAX_ALIASES);
      return;
    }
    if (ev.type !== 'comm') return;
    const msg = parseMessage(ev.msg);
    if (!msg) return;
    const frameId = sentAs.get(msg.parent_header.msg_id);
    if (frameId) msg.parent_header.msg_id = frameId;
    // A comm frame of another context's kernel names its context; the
    // first's carry none.
    const context = 'context' in ev && typeof ev.context === 'string' && ev.context ? ev.context : 'default';
    if (msg.channel === 'shell') onCommMessage(msg, context);
    else onIopub(msg);
  }

  /** @param {LogEvent} ev */
  function captureEvent(ev) {
    if (typeof ev.id !== 'string' || !captures.size) return false;
    const item = sinkItemOfEvent(ev);
    return !!item && capture(ev.id, item);
  }

  /** @param {RejectedFrame} ev */
  function onRejected(ev) {
    const id = String(ev.id);
    const p = infos.get(id);
    if (p) {
      infos.delete(id);
      p.reject(new Error('comm_info rejected: ' + (ev.message || ev.code || 'bad request')));
      return true;
    }
    const req = requests.get(id);
    if (req) {
      requests.delete(id);
      console.warn('glassroom: a comm message was rejected:', ev.code, ev.message);
      refused('A widget message was refused: ' + (ev.message || ev.code || 'bad request'));
      idleFor(id, req.callbacks);
      return true;
    }
    return false;
  }

  // idleFor answers the page's message id, which the kernel will not see,
  // as a kernel answers a message it ignores: idle, so that a widget
  // waiting for it sends its next one.
  /**
   * @param {string} id
   * @param {Callbacks | undefined} callbacks
   */
  function idleFor(id, callbacks) {
    const st = callbacks && callbacks.iopub && callbacks.iopub.status;
    /** @type {CommMessage} */
    const idle = {
      header: { msg_id: '', msg_type: 'status' },
      parent_header: { msg_id: id },
      content: { execution_state: 'idle' },
      metadata: {},
      buffers: [],
      channel: 'iopub'
    };
    if (st) later(() => st(idle));
  }

  // ---- registering

  /**
   * @param {string} target
   * @param {((comm: Comm, msg: CommMessage) => unknown) | null} handler
   */
  function registerCommTarget(target, handler) {
    if (!handler) {
      targets.delete(target);
      return;
    }
    targets.set(target, handler);
    for (const [commId, k] of [...kept]) {
      if (k.target !== target) continue;
      kept.delete(commId);
      const [open, ...rest] = k.msgs;
      const c = makeComm(target, commId, k.context);
      if (open && isObject(open.content.data) && isObject(open.content.data.state) && typeof open.content.data.state._model_name === 'string') {
        c.model = open.content.data.state._model_name;
      }
      if (open) later(() => handler(c, open));
      for (const m of rest) {
        later(() => {
          for (const cb of c.onMsg) cb(m);
        });
      }
    }
  }

  /** @param {string} target */
  function dropTarget(target) {
    for (const [commId, k] of [...kept]) {
      if (k.target === target) {
        kept.delete(commId);
        captures.delete(commId);
      }
    }
  }

  /**
   * @param {string} target
   * @param {string} [commId]
   */
  function newComm(target, commId) {
    return makeComm(target, commId || newId(), 'default');
  }

  /** @param {string} target */
  function commInfo(target) {
    const id = newId();
    return new Promise((resolve, reject) => {
      infos.set(id, { resolve, reject, target });
      send({ type: 'comm_info', id, target_name: target });
    });
  }

  /**
   * @param {string} commId
   * @param {((item: SinkItem) => void) | null} sink
   */
  function setOutputSink(commId, sink) {
    if (!sink) {
      sinks.delete(commId);
      return;
    }
    sinks.set(commId, sink);
    const q = sinkQueues.get(commId);
    sinkQueues.delete(commId);
    if (q) for (const item of q) sink(item);
  }

  /** @param {string | null} context */
  function closeAll(context) {
    for (const [commId, k] of [...kept]) {
      if (context === null || k.context === context) {
        kept.delete(commId);
        captures.delete(commId);
      }
    }
    for (const c of [...comms.values()]) {
      if (context !== null && c.context !== context) continue;
      forget(c.comm_id);
      const callbacks = c.onClose;
      /** @type {CommMessage} */
      const msg = {
        header: { msg_id: '', msg_type: 'comm_close' },
        parent_header: { msg_id: '' },
        content: { comm_id: c.comm_id, data: {} },
        metadata: {},
        buffers: [],
        channel: 'shell'
      };
      later(() => {
        for (const cb of callbacks) cb(msg);
      });
    }
    if (context === null) {
      requests.clear();
      aliases.clear();
      sentAs.clear();
      for (const p of infos.values()) p.reject(new Error('the session changed'));
      infos.clear();
    }
  }

  function connectionLost() {
    const pending = [...requests];
    requests.clear();
    for (const [id, req] of pending) idleFor(id, req.callbacks);
  }

  return {
    handle,
    captureEvent,
    onRejected,
    registerCommTarget,
    dropTarget,
    newComm,
    commInfo,
    setOutputSink,
    closeAll,
    connectionLost,
    size: () => comms.size,
    settled: () => chain
  };
}
