// @ts-check
// The notebook as a document: kept in local storage across reloads, saved
// and opened as .ipynb.

import { saveBlob } from './dom.js';
import { fromNotebook, toNotebook } from './nbformat.js';
import { LS_NOTEBOOK, lsGet, lsSet } from './storage.js';

/**
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
 */
export function createNotebook({ store, cells, kernels, msg }) {
  let saveTimer = 0;

  // scheduleSave stores the notebook locally once edits settle.
  function scheduleSave() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(saveNow, 800);
  }

  function saveNow() {
    clearTimeout(saveTimer);
    const meta = kernels.metadata();
    if (!lsSet(LS_NOTEBOOK, JSON.stringify(toNotebook(cells.snapshot(), true, meta)))) {
      // Probably over quota: keep at least the code.
      lsSet(LS_NOTEBOOK, JSON.stringify(toNotebook(cells.snapshot(), false, meta)));
    }
  }

  // restore loads the locally stored notebook; false when there is none.
  function restore() {
    const raw = lsGet(LS_NOTEBOOK);
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

  return { scheduleSave, saveNow, restore, saveIpynb, openIpynb };
}
