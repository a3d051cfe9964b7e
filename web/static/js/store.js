// @ts-check
// The state the modules share. Everything else (the WebSocket's position in
// the stream, timers, the files panel's folder, which cell runs which
// execution...) is private to the module that owns it.

import { DEFAULT_KERNEL } from './languages.js';

/**
 * @import { Cell } from './cells.js'
 * @import { Kernel } from './languages.js'
 */

/**
 * A session as the server describes it (GET /v1/sessions/{id}); fields
 * other than id may be missing.
 * @typedef {object} Session
 * @property {string} id
 * @property {string} [state] the kernel's state
 * @property {string} [runtime]
 * @property {string} [created_at]
 * @property {string} [expires_at]
 * @property {string} [language] the kernel of its first context
 * @property {string} [preview_host] where its servers' previews are ({port}-{it}), on a gateway that serves them
 */

/**
 * The page's shared state.
 * @typedef {object} Store
 * @property {string} token the API key ('' when none)
 * @property {Session | null} session the open session, or null
 * @property {Cell[]} cells the notebook's cells in order
 * @property {string} language the kernel the notebook's code cells run in (languages.js)
 * @property {Kernel[] | null} kernels the kernels the gateway runs, null until it said
 */

// createStore returns the page's shared state:
//   token    the API key ('' when none)
//   session  the open session as the server described it
//            ({id, state, runtime, created_at, expires_at, ...}), or null
//   cells    the notebook's cells in order (see cells.js for their fields)
//   language the kernel the notebook's code cells run in: python3, r...
//   kernels  the kernels the gateway runs (GET /v1/kernels), null until
//            it said
/** @returns {Store} */
export function createStore() {
  return {
    token: '',
    session: null,
    cells: [],
    language: DEFAULT_KERNEL,
    kernels: null
  };
}
