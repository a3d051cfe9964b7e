// @ts-check
// The notebook's language: the chooser, the kernels the gateway runs (GET
// /v1/kernels), the language a notebook file asks for, and the metadata a
// saved notebook gets. Switching the language makes the notebook's code
// cells run in that language's default context of the session: one kernel
// per language, each keeping its own variables (see cells.js).

import { $, el } from './dom.js';
import { kernelOf, kernelOfNotebook, knownKernels, notebookMetadata, parseKernels } from './languages.js';

/**
 * @import { Request } from './api.js'
 * @import { Msg } from './dom.js'
 * @import { Kernelspec, LanguageInfo } from './languages.js'
 * @import { Store } from './store.js'
 */

/** @typedef {ReturnType<typeof createKernels>} Kernels */

// createKernels owns store.language and store.kernels. deps: store,
// request (api.js), msg, onLanguage() after the notebook's language
// changed, onKernels() after the gateway's list arrived.
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {Msg} deps.msg
 * @param {() => void} deps.onLanguage
 * @param {() => void} deps.onKernels
 */
export function createKernels({ store, request, msg, onLanguage, onKernels }) {
  let loading = false;

  // load asks the gateway which kernels it runs (once it has an answer,
  // again only when asked with force: a new API key).
  /** @param {boolean} [force] */
  function load(force) {
    if (!store.token || loading || (store.kernels && !force)) return Promise.resolve();
    loading = true;
    return request('GET', '/v1/kernels')
      .then((r) => {
        const ks = parseKernels(r);
        if (!ks) return;
        store.kernels = ks;
        render();
        onKernels();
        const name = kernelOf(store.language, ks).display_name;
        if (!ks.some((k) => k.name === store.language)) msg(name + ' is not installed on this gateway: choose another language', 'error');
      })
      .catch(() => {
        /* the chooser keeps what it has; the next session or key asks again */
      })
      .then(() => {
        loading = false;
      });
  }

  // render fills the chooser: the gateway's kernels (Python until it said),
  // and the notebook's language when it is not among them.
  function render() {
    const sel = $('language-select');
    const ks = store.kernels || knownKernels();
    sel.replaceChildren();
    for (const k of ks) {
      const o = el('option', null, k.display_name);
      o.value = k.name;
      sel.appendChild(o);
    }
    if (!ks.some((k) => k.name === store.language)) {
      const o = el('option', null, kernelOf(store.language, store.kernels).display_name + (store.kernels ? ' (not installed)' : ''));
      o.value = store.language;
      sel.appendChild(o);
    }
    sel.value = store.language;
    sel.title = 'The language of the notebook\u2019s code cells: ' + kernelOf(store.language, store.kernels).display_name;
  }

  // choose makes kernel name the notebook's language; it reports whether
  // it changed.
  /** @param {string} name */
  function choose(name) {
    if (!name || name === store.language) return false;
    store.language = name;
    render();
    onLanguage();
    return true;
  }

  // chosen handles the chooser's change event.
  function chosen() {
    const before = kernelOf(store.language, store.kernels).display_name;
    if (!choose($('language-select').value)) return;
    const name = kernelOf(store.language, store.kernels).display_name;
    msg(
      'Code cells now run in ' + name + (store.session ? ': its own kernel in this session, started on the first run; the ' + before + ' kernel keeps its variables' : '')
    );
  }

  // fromNotebook takes the language a notebook file (parsed JSON) asks
  // for when it is installed, and returns a note for the user ('' when
  // there is nothing to say).
  /**
   * @param {unknown} nb
   * @returns {string}
   */
  function fromNotebook(nb) {
    const { kernel, asked } = kernelOfNotebook(nb, store.kernels);
    if (kernel) {
      choose(kernel);
      return '';
    }
    if (!asked) return '';
    return asked + ' is not installed here: the cells run in ' + kernelOf(store.language, store.kernels).display_name;
  }

  // metadata is the notebook's kernelspec and language_info.
  /** @returns {{kernelspec: Kernelspec, language_info: LanguageInfo}} */
  function metadata() {
    return notebookMetadata(store.language, store.kernels);
  }

  return { load, render, choose, chosen, fromNotebook, metadata };
}
