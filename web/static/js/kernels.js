// @ts-check
// The notebook's language: the chooser, the kernels the gateway runs (GET
// /v1/kernels), the language a notebook file asks for, and the metadata a
// saved notebook gets. Switching the language makes the notebook's code
// cells run in that language's default context of the session: one kernel
// per language, each keeping its own variables (see cells.js).

import { sessionPath } from './api.js';
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
// request (api.js), msg, context() the id of the session's context that
// runs the notebook's language (null before it started), onLanguage(previous)
// after the notebook's language changed, onKernels() after the gateway's
// list arrived.
/**
 * @param {object} deps
 * @param {Store} deps.store
 * @param {Request} deps.request
 * @param {Msg} deps.msg
 * @param {() => string | null} deps.context
 * @param {(previous: string) => void} deps.onLanguage
 * @param {() => void} deps.onKernels
 */
export function createKernels({ store, request, msg, context, onLanguage, onKernels }) {
  let loading = false;
  // The language_info of each language's kernel (kernel name -> the
  // kernel's own, from its kernel_info_reply), once a kernel said.
  /** @type {Map<string, unknown>} */
  const infos = new Map();
  /** @type {Set<string>} kernels asked for now */
  const asking = new Set();

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
    const version = metadata().language_info.version;
    sel.title = 'The language of the notebook\u2019s code cells: ' + kernelOf(store.language, store.kernels).display_name + (version ? ' (' + version + ')' : '');
  }

  // choose makes kernel name the notebook's language; it reports whether
  // it changed.
  /** @param {string} name */
  function choose(name) {
    if (!name || name === store.language) return false;
    const previous = store.language;
    store.language = name;
    render();
    onLanguage(previous);
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

  // askInfo asks the kernel of the notebook's language for its
  // language_info (its version above all), once it runs; metadata uses it.
  function askInfo() {
    const ctx = context();
    const kernel = store.language;
    if (!store.session || !ctx || infos.has(kernel) || asking.has(kernel)) return;
    asking.add(kernel);
    request('GET', sessionPath(store.session.id, '/contexts/' + encodeURIComponent(ctx) + '/kernel_info'))
      .then((r) => {
        if (r && typeof r === 'object' && r.language_info && typeof r.language_info === 'object') {
          infos.set(kernel, r.language_info);
          render();
        }
      })
      .catch(() => {
        /* the metadata goes without the version */
      })
      .then(() => asking.delete(kernel));
  }

  // metadata is the notebook's kernelspec and language_info (with the
  // kernel's version once it said).
  /** @returns {{kernelspec: Kernelspec, language_info: LanguageInfo}} */
  function metadata() {
    return notebookMetadata(store.language, store.kernels, infos.get(store.language));
  }

  return { load, render, choose, chosen, fromNotebook, askInfo, metadata };
}
