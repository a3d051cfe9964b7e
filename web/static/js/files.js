// @ts-check
// The files panel: list the session's workspace, open folders, upload by
// picker or drag-and-drop, download and delete.

import { $, clear, el, saveBlob } from './dom.js';
import { sessionPath } from './api.js';
import { basename, encPath, fmtSize } from './text.js';

/**
 * @import { Request } from './api.js'
 * @import { Msg } from './dom.js'
 * @import { JsonObject } from './nbformat.js'
 * @import { Store, Session } from './store.js'
 */

/** @typedef {ReturnType<typeof createFiles>} Files */

// createFiles returns the panel. deps: store, request (api.js), msg.
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {Msg} deps.msg
 * @param {((path: string) => void) | null} [deps.openNotebook] opens a .ipynb of the workspace as the notebook
 */
export function createFiles({ store, request, msg, openNotebook = null }) {
  let dir = ''; // the folder shown, relative to the workspace
  let req = 0; // bumped per listing; late answers to older ones are dropped
  let timer = 0;

  /**
   * @param {Session} session
   * @param {string} path
   */
  const fileUrl = (session, path) => sessionPath(session.id, '/files/' + encPath(path));

  // refreshSoon lists again shortly (file events come in bursts).
  function refreshSoon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 300);
  }

  function renderPath() {
    $('files-path').textContent = '/' + dir;
    $('files-up').disabled = !store.session || !dir;
  }

  function refresh() {
    const list = $('file-list');
    renderPath();
    const mine = ++req;
    if (!store.session) {
      clear(list);
      list.appendChild(el('div', 'file-empty', 'No session'));
      return Promise.resolve();
    }
    const session = store.session;
    const d = dir;
    const url = sessionPath(session.id, '/files') + (d ? '?path=' + encodeURIComponent(d) : '');
    list.classList.add('loading');
    return request('GET', url)
      .then((r) => {
        if (mine === req) renderList(session, (r && r.entries) || []);
      })
      .catch((e) => {
        if (mine !== req) return;
        if (e.status === 404 && d) {
          // The folder went away: go back to the root.
          dir = '';
          refresh();
          return;
        }
        clear(list);
        list.appendChild(el('div', 'file-empty error', 'Could not list files: ' + e.message));
      })
      .then(() => {
        if (mine === req) list.classList.remove('loading');
      });
  }

  /**
   * @param {Session} session
   * @param {JsonObject[]} entries the server's listing
   */
  function renderList(session, entries) {
    const list = $('file-list');
    clear(list);
    entries = entries.slice().sort((a, b) => {
      const da = a.type === 'dir' ? 0 : 1;
      const db = b.type === 'dir' ? 0 : 1;
      if (da !== db) return da - db;
      return String(a.name).localeCompare(String(b.name));
    });
    if (!entries.length) {
      list.appendChild(el('div', 'file-empty', 'No files yet. Upload some, or write them from code.'));
      return;
    }
    for (const ent of entries) {
      const path = ent.path || (dir ? dir + '/' : '') + ent.name;
      const isDir = ent.type === 'dir';
      const row = el('div', 'file-entry' + (isDir ? ' dir' : ''));
      row.dataset.path = path;
      row.dataset.type = isDir ? 'dir' : 'file';
      const notebook = !isDir && !!openNotebook && /\.ipynb$/i.test(path);
      const link = el('a', 'file-name', (ent.name || basename(path)) + (isDir ? '/' : ''));
      link.href = isDir ? '#' : fileUrl(session, path);
      link.title = isDir ? 'Open folder ' + path : notebook ? 'Open ' + path + ' as the notebook' : 'Download ' + path;
      if (!isDir && !notebook) link.setAttribute('download', basename(path));
      link.addEventListener('click', (e) => {
        e.preventDefault();
        if (isDir) {
          dir = path.replace(/\/+$/, '');
          refresh();
        } else if (notebook && openNotebook) {
          openNotebook(path);
        } else {
          download(path);
        }
      });
      row.appendChild(link);
      row.appendChild(el('span', 'file-size', isDir ? '' : fmtSize(ent.size)));
      if (notebook) {
        const get = el('button', 'file-download', '\u2913');
        get.type = 'button';
        get.title = 'Download ' + path;
        get.setAttribute('aria-label', 'Download ' + path);
        get.addEventListener('click', () => download(path));
        row.appendChild(get);
      }
      const del = el('button', 'file-delete', '\u2715');
      del.type = 'button';
      del.title = 'Delete ' + path;
      del.setAttribute('aria-label', 'Delete ' + path);
      del.addEventListener('click', () => remove(path));
      row.appendChild(del);
      list.appendChild(row);
    }
  }

  /** @param {string} path */
  function download(path) {
    if (!store.session) return;
    request('GET', fileUrl(store.session, path), { raw: true })
      .then((/** @type {Response} */ resp) => resp.blob())
      .then((blob) => saveBlob(blob, basename(path)))
      .catch((e) => msg('Download failed: ' + e.message, 'error'));
  }

  /** @param {string} path */
  function remove(path) {
    if (!store.session) return;
    request('DELETE', fileUrl(store.session, path))
      .then(() => msg('Deleted ' + path))
      .catch((e) => msg('Delete failed: ' + e.message, 'error'))
      .then(refresh);
  }

  /**
   * @param {File[]} files
   * @returns {Promise<void>}
   */
  function upload(files) {
    if (!files.length) return Promise.resolve();
    if (!store.session) {
      msg('Create or reopen a session first', 'error');
      return Promise.resolve();
    }
    const form = new FormData();
    if (dir) form.append('dir', dir);
    for (const f of files) form.append('file', f, f.name);
    msg('Uploading ' + files.length + ' file' + (files.length > 1 ? 's' : '') + '\u2026');
    $('files-panel').classList.add('uploading');
    return request('POST', sessionPath(store.session.id, '/files'), { form })
      .then((r) => {
        const n = r && r.files ? r.files.length : files.length;
        msg('Uploaded ' + n + ' file' + (n === 1 ? '' : 's'));
      })
      .catch((e) => msg('Upload failed: ' + e.message, 'error'))
      .then(() => {
        $('files-panel').classList.remove('uploading');
        refresh();
      });
  }

  function bind() {
    $('files-refresh').addEventListener('click', () => refresh());
    $('files-up').addEventListener('click', () => {
      const parts = dir.split('/').filter(Boolean);
      parts.pop();
      dir = parts.join('/');
      refresh();
    });
    const input = $('file-input');
    input.addEventListener('change', () => {
      const files = Array.from(input.files || []);
      input.value = '';
      upload(files);
    });
    bindDropZone();
  }

  function bindDropZone() {
    const panel = $('files-panel');
    let depth = 0;
    panel.addEventListener('dragenter', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth++;
      panel.classList.add('dragover');
    });
    panel.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = store.session ? 'copy' : 'none';
    });
    panel.addEventListener('dragleave', (e) => {
      if (!hasFiles(e)) return;
      depth = Math.max(0, depth - 1);
      if (!depth) panel.classList.remove('dragover');
    });
    panel.addEventListener('drop', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.stopPropagation();
      depth = 0;
      panel.classList.remove('dragover');
      if (e.dataTransfer) upload(droppedFiles(e.dataTransfer));
    });
    // A file dropped anywhere else must not navigate away from the notebook.
    window.addEventListener('dragover', (e) => {
      if (hasFiles(e)) e.preventDefault();
    });
    window.addEventListener('drop', (e) => {
      if (hasFiles(e)) e.preventDefault();
    });
  }

  return {
    bind,
    refresh,
    refreshSoon,
    // reset goes back to the workspace root (a new session).
    reset() {
      dir = '';
    }
  };
}

/** @param {DragEvent} e */
function hasFiles(e) {
  const t = e.dataTransfer && e.dataTransfer.types;
  if (!t) return false;
  for (let i = 0; i < t.length; i++) if (t[i] === 'Files') return true;
  return false;
}

/**
 * @param {DataTransfer} dt
 * @returns {File[]}
 */
function droppedFiles(dt) {
  /** @type {File[]} */
  const out = [];
  const items = dt.items;
  if (items && items.length) {
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (it.kind !== 'file') continue;
      const entry = typeof it.webkitGetAsEntry === 'function' ? it.webkitGetAsEntry() : null;
      if (entry && entry.isDirectory) continue; // folders are not uploaded
      const f = it.getAsFile();
      if (f) out.push(f);
    }
    return out;
  }
  return Array.from(dt.files || []);
}
