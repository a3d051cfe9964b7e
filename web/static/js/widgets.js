// @ts-check
// Jupyter widgets (ipywidgets 8) in the notebook: the comm layer (comms.js)
// on the session's WebSocket, and the widget manager of the vendor widgets
// bundle (vendor/widgets.js, with vendor/widgets.css), which this module
// imports only when a session has widgets: when the kernel opens a widget
// comm, when an output shows a widget view, or when a (re)connected page
// finds widget comms in the kernel (comm_info), whose state it then asks
// for (the manager's _loadFromKernel, as JupyterLab restores widgets after
// a reload).
//
// A widget view (application/vnd.jupyter.widget-view+json in an output) is
// drawn in the output; until its model exists (or when it never will: the
// kernel restarted, the notebook was opened from a file) the output shows
// the bundle's text/plain. A view alone does not load the bundle: the
// session's widgets do. Output widgets' outputs are drawn by outputs.js,
// as a cell's are. An output of a widget's callback that no Output widget
// takes (print() in on_click) goes to the cell that shows the widget.
/** @import { CommEvent, CommInfoReplyFrame, CommSentFrame, LogEvent, RejectedFrame } from '../../types/wire' */

import { createComms, sinkItemOfMessage } from './comms.js';
import { outputFromNb } from './nbformat.js';

/**
 * @import { Comms } from './comms.js'
 * @import { Msg } from './dom.js'
 * @import { JsonObject, OutputRecord } from './nbformat.js'
 * @import { Frame } from './ws.js'
 * @import { WidgetManager, NbOutputJson } from '../vendor/widgets.js'
 */

export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const TARGET = 'jupyter.widget';
const BUNDLE_CSS = 'vendor/widgets.css';

// widgetModelId reads the value of a widget-view output: the id of the
// model to show, or null when it is not a view of protocol 2 (ipywidgets
// 8; the output's text/plain is shown instead). The value is hostile
// input: an object or its JSON text.
/**
 * @param {unknown} v
 * @returns {string | null}
 */
export function widgetModelId(v) {
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = /** @type {JsonObject} */ (v);
  if (typeof o.model_id !== 'string' || !/^[\w-]{1,128}$/.test(o.model_id)) return null;
  if (o.version_major !== undefined && o.version_major !== 2) return null;
  return o.model_id;
}

/**
 * @typedef {object} Widgets
 * @property {(ev: CommEvent | CommSentFrame | CommInfoReplyFrame) => void} handle applies a comm, comm_sent or comm_info_reply event
 * @property {(ev: LogEvent) => boolean} captureEvent whether an Output widget took an execution's output event
 * @property {(ev: RejectedFrame) => boolean} onRejected takes a rejected frame of the widgets' (false: not one)
 * @property {(host: HTMLElement, value: unknown, plain: unknown) => boolean} renderView draws a widget-view output's view into host (false: not a view it can show)
 * @property {(root: Element) => void} disposeUnder removes the views shown inside root
 * @property {() => void} connected the WebSocket (re)opened: restore the kernel's widgets
 * @property {(code: number) => void} connectionLost the WebSocket dropped with close code: pending widget messages get their idle; a too-large or busy close is told
 * @property {(context: string | null) => void} kernelGone the kernel of context (null: every one, a new session) restarted or died: its widgets go
 * @property {() => boolean} loaded whether the widget bundle is loaded (tests)
 */

// createWidgets returns the page's widgets. deps:
//   send(frame)               the WebSocket (ws.js)
//   msg                       status messages
//   renderOutputs(el, outs)   draws nbformat outputs into el (outputs.js)
//   strayOutput(node, rec)    an output of a widget's callback that no
//                             Output widget took, for the cell that shows node
//   importBundle()            imports the bundle (default: ../vendor/widgets.js)
/**
 * @param {object} deps
 * @param {(frame: Frame) => void} deps.send
 * @param {Msg} deps.msg
 * @param {(el: HTMLElement, outputs: NbOutputJson[]) => void} deps.renderOutputs
 * @param {(node: Element, rec: OutputRecord) => void} deps.strayOutput
 * @param {() => Promise<typeof import('../vendor/widgets.js')>} [deps.importBundle]
 * @returns {Widgets}
 */
export function createWidgets({ send, msg, renderOutputs, strayOutput, importBundle = () => import('../vendor/widgets.js') }) {
  /** @type {Promise<WidgetManager> | null} */
  let loading = null;
  /** @type {WidgetManager | null} */
  let manager = null;
  let generation = 0; // bumped by a new session: stale restores stop

  /** @type {Comms} */
  const comms = createComms({
    send,
    refused: (text) => msg(text, 'error'),
    onTarget: (target) => {
      if (target !== TARGET) return false;
      load().catch(() => {});
      return true;
    }
  });

  // The bundle's stylesheet: a <link> (the CSP allows same-origin sheets).
  function addStylesheet() {
    if (document.querySelector('link[data-widgets]')) return;
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = BUNDLE_CSS;
    link.dataset.widgets = '1';
    document.head.appendChild(link);
  }

  /** @returns {Promise<WidgetManager>} */
  function load() {
    if (loading) return loading;
    loading = (async () => {
      addStylesheet();
      const mod = await importBundle();
      const m = mod.createWidgetManager(comms, {
        renderOutputs,
        output: (view, message) => {
          const item = sinkItemOfMessage(message.header.msg_type, message.content);
          if (!item || !('output' in item)) return;
          const rec = outputFromNb(item.output);
          const node = view && /** @type {{el?: unknown}} */ (view).el;
          if (rec && node instanceof Element) strayOutput(node, rec);
        }
      });
      comms.registerCommTarget(TARGET, (comm, message) =>
        m.handle_comm_open(comm, message).catch((e) => console.warn('glassroom: widget not created:', e))
      );
      manager = m;
      for (const v of waiting) if (v.host.isConnected) draw(m, v);
      waiting.clear();
      return m;
    })();
    loading.catch((e) => {
      console.warn('glassroom: the widgets did not load:', e);
      comms.dropTarget(TARGET);
      loading = null;
      msg('The widgets could not be loaded: ' + (e && e.message ? e.message : e), 'error');
    });
    return loading;
  }

  // Views waiting for the bundle: drawn once a session's widgets load it
  // (a notebook opened from a file, or before its session reconnected).
  /** @type {Set<{host: HTMLElement, id: string, fallback: HTMLElement}>} */
  const waiting = new Set();

  /**
   * @param {WidgetManager} m
   * @param {{host: HTMLElement, id: string, fallback: HTMLElement}} v
   */
  function draw(m, v) {
    m.renderView(v.host, v.id)
      .then((view) => {
        if (!view) return;
        v.fallback.remove();
        // Its model closed (the kernel restarted): the text again.
        view.once('remove', () => {
          if (v.host.isConnected) v.host.appendChild(v.fallback);
        });
      })
      .catch((e) => console.warn('glassroom: widget view not shown:', e));
  }

  /**
   * @param {HTMLElement} host
   * @param {unknown} value
   * @param {unknown} plain
   */
  function renderView(host, value, plain) {
    const id = widgetModelId(value);
    if (!id) return false;
    host.classList.add('widget-area');
    host.dataset.modelId = id;
    // Until the view is there: the text the kernel gave for it.
    const fallback = document.createElement('pre');
    fallback.className = 'widget-missing';
    fallback.textContent = typeof plain === 'string' && plain ? plain : 'widget';
    host.appendChild(fallback);
    const v = { host, id, fallback };
    if (loading) loading.then((m) => draw(m, v)).catch(() => {});
    else waiting.add(v);
    return true;
  }

  function connected() {
    const gen = generation;
    comms
      .commInfo(TARGET)
      .then((found) => {
        if (gen !== generation || !Object.keys(found).length) return;
        return load().then((m) => (gen === generation ? m._loadFromKernel() : undefined));
      })
      .catch(() => {
        /* no widgets to restore (or a gateway without comms) */
      });
  }

  // connectionLost: the socket dropped. The widgets' messages in flight
  // get their idle (none will come), and a message that was the cause is
  // named: 1013, the gateway's budget for large messages was in use; 1009,
  // a frame larger than the gateway takes.
  /** @param {number} code */
  function connectionLost(code) {
    comms.connectionLost();
    if (code === 1013) msg('The gateway was busy with other large messages: a widget message was not sent. Try again.', 'error');
    else if (code === 1009) msg('A message was larger than the gateway takes: it was not sent, and the connection was reset.', 'error');
  }

  /** @param {string | null} context */
  function kernelGone(context) {
    if (context === null) generation++;
    comms.closeAll(context);
  }

  return {
    handle: comms.handle,
    captureEvent: comms.captureEvent,
    onRejected: comms.onRejected,
    renderView,
    disposeUnder: (root) => {
      if (manager) manager.disposeUnder(root);
    },
    connected,
    connectionLost,
    kernelGone,
    loaded: () => manager !== null
  };
}
