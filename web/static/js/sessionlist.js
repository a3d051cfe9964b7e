// @ts-check
// The sessions panel: the key's live sessions (language, state, idle time
// left, memory in use), to open, interrupt, restart or end, refreshed by
// itself while the panel shows.

import { $, clear, el } from './dom.js';
import { sessionPath } from './api.js';
import { fmtClock, fmtSize } from './text.js';

/**
 * @import { Request } from './api.js'
 * @import { Msg } from './dom.js'
 * @import { Store } from './store.js'
 */

/** @typedef {ReturnType<typeof createSessionList>} SessionList */

const REFRESH_MS = 5000;
const LIST_LIMIT = 100; // asked for (the tabs' states come from it too)
const MAX_ROWS = 50; // shown, and memory asked for the first MAX_METRICS only
const MAX_METRICS = 10;

// createSessionList returns the panel. deps: store, request (api.js), msg,
// open(id, language) (show it in a tab), listed(sessions) (told each
// listing: the tabs' states come from it while the panel shows), endCurrent() (end the page's own session,
// which asks about unsaved changes).
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {Msg} deps.msg
 * @param {(id: string, language: string) => void} deps.open
 * @param {(sessions: any[]) => void} deps.listed
 * @param {() => void} deps.endCurrent
 */
export function createSessionList({ store, request, msg, open, listed, endCurrent }) {
  let timer = 0;
  let gen = 0; // bumped per listing; late answers to older ones are dropped
  /** @type {Set<string>} sessions ended from here: not asked about again */
  const ended = new Set();

  const shown = () => !$('sessions-panel').hidden;

  function toggle() {
    const p = $('sessions-panel');
    p.hidden = !p.hidden;
    $('sessions-toggle').setAttribute('aria-pressed', String(!p.hidden));
    clearInterval(timer);
    timer = 0;
    if (!p.hidden) {
      refresh();
      timer = setInterval(refresh, REFRESH_MS);
    }
  }

  function refresh() {
    if (!shown()) return Promise.resolve();
    const list = $('session-list');
    if (!store.token) {
      clear(list);
      list.appendChild(el('div', 'file-empty', 'No API key'));
      return Promise.resolve();
    }
    const mine = ++gen;
    return request('GET', '/v1/sessions?limit=' + LIST_LIMIT)
      .then((page) => {
        if (mine !== gen) return;
        const all = page && Array.isArray(page.sessions) ? page.sessions : [];
        listed(all);
        render(all.slice(0, MAX_ROWS));
        // Memory in use, for the first few (each answer takes a moment).
        all.slice(0, MAX_METRICS).forEach((/** @type {any} */ s) => {
          if (!s || typeof s.id !== 'string' || ended.has(s.id)) return;
          request('GET', sessionPath(s.id, '/metrics'))
            .then((m) => {
              const cell = document.querySelector('#session-list [data-session="' + CSS.escape(s.id) + '"] .session-mem');
              if (mine === gen && cell && m && typeof m.mem_used === 'number' && m.mem_used > 0) cell.textContent = fmtSize(m.mem_used);
            })
            .catch(() => {});
        });
      })
      .catch((e) => {
        if (mine !== gen) return;
        clear(list);
        list.appendChild(el('div', 'file-empty', 'Could not list the sessions: ' + e.message));
      });
  }

  /** @param {any[]} all */
  function render(all) {
    const list = $('session-list');
    clear(list);
    if (!all.length) {
      list.appendChild(el('div', 'file-empty', 'No live sessions for this key'));
      return;
    }
    for (const s of all) {
      if (!s || typeof s.id !== 'string' || ended.has(s.id)) continue;
      const id = s.id;
      const current = !!store.session && store.session.id === id;
      const row = el('div', 'session-row' + (current ? ' current' : ''));
      row.dataset.session = id;
      const head = el('div', 'session-head');
      head.appendChild(el('code', 'session-name', id.length > 14 ? id.slice(0, 12) + '\u2026' : id)).setAttribute('title', id);
      head.appendChild(el('span', 'badge state-' + String(s.state || 'idle').replace(/[^a-z]+/g, '-'), s.paused ? 'paused' : String(s.state || '')));
      row.appendChild(head);
      const meta = el('div', 'session-meta');
      meta.appendChild(el('span', 'session-lang', String(s.language || 'python3')));
      const left = typeof s.expires_at === 'string' ? Date.parse(s.expires_at) - Date.now() : NaN;
      meta.appendChild(el('span', 'session-idle', isNaN(left) ? '' : left > 0 ? 'idle timeout in ' + fmtClock(left) : 'expiring'));
      meta.appendChild(el('span', 'session-mem', ''));
      row.appendChild(meta);
      const actions = el('div', 'session-actions');
      /**
       * @param {string} label
       * @param {string} title
       * @param {() => void} fn
       */
      const action = (label, title, fn) => {
        const b = el('button', 'session-' + label.toLowerCase(), label);
        b.type = 'button';
        b.title = title;
        b.addEventListener('click', fn);
        actions.appendChild(b);
      };
      if (!current) action('Open', 'Open this session and its notebook in a tab', () => open(id, String(s.language || '')));
      action('Interrupt', 'Interrupt what it runs', () => post(id, '/interrupt', 'Interrupted'));
      action('Restart', 'Restart its kernel (variables are lost)', () => post(id, '/restart', 'Restarted'));
      action('End', 'Delete this session and its kernel', () => {
        gen++; // a listing under way still has it
        if (current) {
          endCurrent();
          setTimeout(refresh, 300);
          return;
        }
        ended.add(id);
        row.remove();
        request('DELETE', sessionPath(id))
          .then(() => msg('Session ' + id + ' ended'))
          .catch((e) => msg('Could not end ' + id + ': ' + e.message, 'error'))
          .then(refresh);
      });
      row.appendChild(actions);
      list.appendChild(row);
    }
  }

  /**
   * @param {string} id
   * @param {string} suffix
   * @param {string} done
   */
  function post(id, suffix, done) {
    request('POST', sessionPath(id, suffix))
      .then(() => msg(done + ' ' + id))
      .catch((e) => msg(done.replace(/ed$/, '') + ' failed: ' + e.message, 'error'))
      .then(refresh);
  }

  return { shown, toggle, refresh };
}
