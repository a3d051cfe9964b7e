// @ts-check
// DOM helpers. Nothing here runs at import time, so the pure modules that
// import this one load in Node for their unit tests.
//
// Safety rule for the whole UI: anything that comes from the kernel or the
// network reaches the page through createElement and textContent (or
// attributes on elements made here), never as markup.

/**
 * Shows a status message: kind 'error' (stays longer) or 'info' (the default).
 * @typedef {(text: string, kind?: 'info' | 'error') => void} Msg
 */

/**
 * The elements of index.html the modules use, by id, with their types.
 * @typedef {object} PageElements
 * @property {HTMLFormElement} token-form
 * @property {HTMLInputElement} token-input
 * @property {HTMLElement} token-state
 * @property {HTMLElement} token-offer
 * @property {HTMLButtonElement} token-offer-keep
 * @property {HTMLButtonElement} token-offer-use
 * @property {HTMLButtonElement} new-session
 * @property {HTMLFormElement} reopen-form
 * @property {HTMLInputElement} reopen-id
 * @property {HTMLButtonElement} reopen-last
 * @property {HTMLElement} session-id
 * @property {HTMLElement} session-runtime
 * @property {HTMLElement} session-expiry
 * @property {HTMLButtonElement} end-session
 * @property {HTMLElement} kernel-status
 * @property {HTMLButtonElement} interrupt-btn
 * @property {HTMLButtonElement} restart-btn
 * @property {HTMLButtonElement} fork-btn
 * @property {HTMLButtonElement} add-cell
 * @property {HTMLButtonElement} add-cell-bottom
 * @property {HTMLButtonElement} run-all
 * @property {HTMLButtonElement} sessions-toggle
 * @property {HTMLElement} account-box
 * @property {HTMLButtonElement} account-btn
 * @property {HTMLElement} account-menu
 * @property {HTMLButtonElement} account-change
 * @property {HTMLButtonElement} account-forget
 * @property {HTMLElement} tab-bar
 * @property {HTMLElement} launcher
 * @property {HTMLDivElement} launcher-kernels
 * @property {HTMLButtonElement} launcher-close
 * @property {HTMLButtonElement} launch-terminal
 * @property {HTMLButtonElement} launch-upload
 * @property {HTMLElement} sessions-panel
 * @property {HTMLDivElement} session-list
 * @property {HTMLButtonElement} restart-run-all
 * @property {HTMLButtonElement} clear-outputs
 * @property {HTMLButtonElement} scroll-running
 * @property {HTMLButtonElement} find-open
 * @property {HTMLElement} find-bar
 * @property {HTMLInputElement} find-input
 * @property {HTMLElement} find-count
 * @property {HTMLButtonElement} find-prev
 * @property {HTMLButtonElement} find-next
 * @property {HTMLInputElement} find-replace
 * @property {HTMLButtonElement} find-replace-one
 * @property {HTMLButtonElement} find-replace-all
 * @property {HTMLButtonElement} find-close
 * @property {HTMLSelectElement} language-select
 * @property {HTMLButtonElement} save-ipynb
 * @property {HTMLInputElement} open-ipynb
 * @property {HTMLElement} message
 * @property {HTMLElement} cells
 * @property {HTMLElement} files-panel
 * @property {HTMLElement} ports-panel
 * @property {HTMLButtonElement} ports-refresh
 * @property {HTMLElement} port-list
 * @property {HTMLButtonElement} files-refresh
 * @property {HTMLButtonElement} files-up
 * @property {HTMLElement} files-path
 * @property {HTMLElement} file-list
 * @property {HTMLInputElement} file-input
 * @property {HTMLButtonElement} terminal-toggle
 * @property {HTMLElement} terminal-panel
 * @property {HTMLElement} terminal-status
 * @property {HTMLButtonElement} terminal-restart
 * @property {HTMLButtonElement} terminal-hide
 * @property {HTMLElement} terminal-screen
 * @property {HTMLElement} help-panel
 * @property {HTMLElement} help-title
 * @property {HTMLElement} help-body
 * @property {HTMLButtonElement} help-close
 */

// $ returns the page's element with id. The page (index.html) has every
// element the modules ask for, so the result is not checked for null.
/**
 * @template {keyof PageElements} K
 * @param {K} id
 * @returns {PageElements[K]}
 */
export function $(id) {
  return /** @type {PageElements[K]} */ (document.getElementById(id));
}

// el makes an element with an optional class and text content.
/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string | null} [className]
 * @param {unknown} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

/** @param {Node} node */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// toolButton makes a small labelled button.
/**
 * @param {string} cls
 * @param {string} label
 * @param {string} title
 */
export function toolButton(cls, label, title) {
  const b = el('button', cls, label);
  b.type = 'button';
  b.title = title;
  b.setAttribute('aria-label', title);
  return b;
}

// saveBlob hands blob to the browser as a download named name.
/**
 * @param {Blob} blob
 * @param {string} name
 */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.className = 'visually-hidden';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// createMessages shows short status messages in node; each replaces the last
// and hides itself after a while (errors stay longer).
/**
 * @param {HTMLElement} node
 * @returns {Msg}
 */
export function createMessages(node) {
  let timer = 0;
  return function show(text, kind) {
    node.textContent = text;
    node.className = 'message ' + (kind || 'info');
    node.hidden = false;
    clearTimeout(timer);
    timer = setTimeout(() => {
      node.hidden = true;
    }, kind === 'error' ? 9000 : 4000);
  };
}
