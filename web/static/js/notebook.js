// @ts-check
// The notebook as a document: kept as notebook.ipynb in its session's
// workspace (Ctrl+S, and autosaved), cached in local storage across
// reloads, downloaded and opened as .ipynb.

import { sessionPath } from './api.js';
import { saveBlob } from './dom.js';
import { fromNotebook, toNotebook } from './nbformat.js';
import { LS_NOTEBOOK, LS_NOTEBOOK_PATH, lsGet, lsSet } from './storage.js';
import { encPath } from './text.js';

// WORKSPACE_FILE is where a new notebook is kept in its session's
// workspace; one opened from the workspace is saved back to its own file.
export const WORKSPACE_FILE = 'notebook.ipynb';
const AUTOSAVE_MS = 5000;

/**
 * @import { Request } from './api.js'
 * @import { Cells } from './cells.js'
 * @import { Msg } from './dom.js'
 * @import { Kernels } from './kernels.js'
 * @import { Store } from './store.js'
 */

/** @typedef {ReturnType<typeof createNotebook>} Notebook */

// createNotebook returns the document operations. deps: store, cells
// (cells.js), kernels (kernels.js: the notebook's language, its metadata),
// msg. A notebook's language is saved in its metadata (kernelspec,
// language_info) and taken back from there.
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Cells} deps.cells
 * @param {Kernels} deps.kernels
 * @param {Msg} deps.msg
 * @param {Request} deps.request
 */
export function createNotebook({ store, cells, kernels, msg, request }) {
  let saveTimer = 0;
  let workspaceTimer = 0;
  let dirty = false; // changed since the last save into the workspace
  let cacheKey = LS_NOTEBOOK; // where local storage keeps it (one key per tab)
  let filePath = lsGet(LS_NOTEBOOK_PATH) || WORKSPACE_FILE; // where it is saved in the workspace

  // useCache makes key the notebook's place in local storage (another tab's
  // notebook); the file in the workspace is the new one's default.
  /** @param {string} key */
  function useCache(key) {
    clearTimeout(saveTimer);
    clearTimeout(workspaceTimer);
    dirty = false;
    cacheKey = key;
    filePath = lsGet(key === LS_NOTEBOOK ? LS_NOTEBOOK_PATH : key + '.path') || WORKSPACE_FILE;
  }

  // scheduleSave stores the notebook locally once edits settle, and into
  // the session's workspace (autosave) a little later.
  function scheduleSave() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(saveNow, 800);
    dirty = true;
    clearTimeout(workspaceTimer);
    if (store.session) workspaceTimer = setTimeout(() => saveToWorkspace(true), AUTOSAVE_MS);
  }

  // saveToWorkspace writes the notebook to its file (filePath) in the open
  // session's workspace (Ctrl+S; quietly when auto). The workspace is the
  // store: local storage is a cache of it.
  /** @param {boolean} [auto] */
  function saveToWorkspace(auto) {
    clearTimeout(workspaceTimer);
    const s = store.session;
    if (!s) {
      if (!auto) msg('Saving into the workspace needs a session: the kernel is not ready yet', 'error');
      return Promise.resolve();
    }
    saveNow();
    const nb = toNotebook(cells.snapshot(), true, kernels.metadata());
    const blob = new Blob([JSON.stringify(nb, null, 1) + '\n'], { type: 'application/x-ipynb+json' });
    dirty = false;
    const target = filePath;
    return request('PUT', sessionPath(s.id, '/files/' + encPath(target)), { blob })
      .then(() => {
        if (!auto) msg('Saved ' + target + ' into the workspace');
      })
      .catch((e) => {
        dirty = true;
        msg('Could not save ' + target + ': ' + e.message, 'error');
      });
  }

  // openFromWorkspace opens a .ipynb of the session's workspace as the
  // notebook (its cells and outputs); Ctrl+S then saves it back there.
  // quiet: a file that is not there is no error (a session never saved);
  // still, asked when the file came: whether the page still wants it.
  /**
   * @param {string} path
   * @param {boolean} [quiet]
   * @param {() => boolean} [still]
   */
  function openFromWorkspace(path, quiet, still) {
    const s = store.session;
    if (!s) return Promise.resolve();
    return request('GET', sessionPath(s.id, '/files/' + encPath(path)), { raw: true })
      .then((/** @type {Response} */ resp) => resp.text())
      .then((text) => {
        if (still && !still()) return;
        const nb = JSON.parse(text);
        const specs = fromNotebook(nb);
        const note = kernels.fromNotebook(nb);
        cells.replaceAll(specs);
        if (!store.cells.length) cells.insert(0);
        filePath = path;
        lsSet(cacheKey === LS_NOTEBOOK ? LS_NOTEBOOK_PATH : cacheKey + '.path', path);
        saveNow();
        dirty = false;
        msg('Opened ' + path + ' (' + store.cells.length + ' cells)' + (note ? '. ' + note : ''), note ? 'error' : 'info');
      })
      .catch((e) => {
        if (!(quiet && e.status === 404)) msg('Could not open ' + path + ': ' + e.message, 'error');
      });
  }

  // isDirty reports changes not yet in the workspace.
  const isDirty = () => dirty;

  function saveNow() {
    clearTimeout(saveTimer);
    const meta = kernels.metadata();
    if (!lsSet(cacheKey, JSON.stringify(toNotebook(cells.snapshot(), true, meta)))) {
      // Probably over quota: keep at least the code.
      lsSet(cacheKey, JSON.stringify(toNotebook(cells.snapshot(), false, meta)));
    }
  }

  // restore loads the locally stored notebook; false when there is none.
  function restore() {
    const raw = lsGet(cacheKey);
    if (!raw) return false;
    try {
      const nb = JSON.parse(raw);
      const specs = fromNotebook(nb);
      kernels.fromNotebook(nb);
      cells.replaceAll(specs);
      return store.cells.length > 0;
    } catch (_) {
      return false;
    }
  }

  function saveIpynb() {
    const nb = toNotebook(cells.snapshot(), true, kernels.metadata());
    const blob = new Blob([JSON.stringify(nb, null, 1) + '\n'], { type: 'application/x-ipynb+json' });
    saveBlob(blob, (store.session ? 'glassroom-' + store.session.id.slice(0, 12) : 'notebook') + '.ipynb');
  }

  /** @param {File | null | undefined} file */
  function openIpynb(file) {
    if (!file) return;
    file
      .text()
      .then((text) => {
        const nb = JSON.parse(text);
        const specs = fromNotebook(nb);
        const note = kernels.fromNotebook(nb);
        cells.replaceAll(specs);
        if (!store.cells.length) cells.insert(0);
        saveNow();
        msg('Opened ' + file.name + ' (' + store.cells.length + ' cells, ' + kernels.metadata().kernelspec.display_name + ')' + (note ? '. ' + note : ''), note ? 'error' : 'info');
      })
      .catch((e) => msg('Could not open ' + file.name + ': ' + e.message, 'error'));
  }

  return { scheduleSave, saveNow, saveToWorkspace, openFromWorkspace, isDirty, restore, saveIpynb, openIpynb, useCache };
}
