// @ts-check
// The servers panel: the ports a process of the session's sandbox
// listens on (a Flask app a cell started, a dev server in the terminal),
// each with a link that opens it on the gateway's preview origin (never
// this page's: the sandbox writes those pages). The kernels' own
// listeners, there when the session opened and on ephemeral ports, are
// left out. It looks again after each run, every few seconds while the
// notebook's kernel is busy (a cell that serves until interrupted), and
// on Refresh. On a gateway that serves no previews (the session has no
// preview_host) it does nothing: the panel stays hidden.

import { $, clear, el } from './dom.js';
import { sessionPath } from './api.js';

/**
 * @import { Request } from './api.js'
 * @import { Store } from './store.js'
 */

/** @typedef {ReturnType<typeof createPorts>} Ports */

// Ephemeral ports (Linux's range starts here) are shown only when they
// were not there when the session opened.
const EPHEMERAL = 32768;
const BUSY_POLL_MS = 4000;

// createPorts returns the panel. deps: store, request (api.js), busy
// (whether the notebook's kernel runs code).
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {() => boolean} deps.busy
 */
export function createPorts({ store, request, busy }) {
  /** @type {Set<number> | null} */
  let baseline = null; // the ports there when the session opened
  /** @type {Map<number, string>} */
  const links = new Map(); // port → its preview link, minted once per session
  let req = 0;
  let sessionId = '';

  setInterval(() => {
    if (store.session && busy() && !document.hidden) refresh();
  }, BUSY_POLL_MS);
  $('ports-refresh').addEventListener('click', () => refresh());

  // sessionChanged forgets the last session's ports.
  function sessionChanged() {
    baseline = null;
    links.clear();
    sessionId = store.session ? store.session.id : '';
    render([]);
    refresh();
  }

  /** @param {number[]} shown */
  function render(shown) {
    const list = $('port-list');
    clear(list);
    $('ports-panel').hidden = shown.length === 0;
    for (const port of shown) {
      const row = el('div', 'port-row');
      const href = links.get(port);
      if (href) {
        const a = /** @type {HTMLAnchorElement} */ (el('a', 'port-link', 'Port ' + port + ' \u2197'));
        a.href = href;
        a.target = '_blank';
        a.rel = 'noopener noreferrer';
        a.dataset.port = String(port);
        a.title = 'Open the server on port ' + port + ' in a new tab (its own origin)';
        row.appendChild(a);
      } else {
        row.appendChild(el('span', 'port-plain', 'Port ' + port));
      }
      list.appendChild(row);
    }
  }

  function refresh() {
    const session = store.session;
    if (!session || !session.preview_host) return Promise.resolve();
    const mine = ++req;
    return request('GET', sessionPath(session.id, '/ports'))
      .then(async (out) => {
        if (mine !== req || !store.session || store.session.id !== sessionId) return;
        /** @type {number[]} */
        const ports = ((out && out.ports) || []).map((/** @type {{port: number}} */ p) => Number(p.port));
        if (baseline === null) baseline = new Set(ports);
        const base = baseline;
        const shown = [...new Set(ports)].filter((p) => p < EPHEMERAL || !base.has(p)).sort((a, b) => a - b);
        for (const port of shown) {
          if (links.has(port)) continue;
          const p = await request('POST', sessionPath(session.id, '/previews'), { json: { port } }).catch(() => null);
          if (p && p.url) links.set(port, String(p.url));
        }
        if (mine === req) render(shown);
      })
      .catch(() => {}); // a runtime without commands, a session gone: nothing to show
  }

  return { sessionChanged, refresh };
}
