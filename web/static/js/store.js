// @ts-check
// The state the modules share. Everything else (the WebSocket's position in
// the stream, timers, the files panel's folder, which cell runs which
// execution...) is private to the module that owns it.

/** @import { Cell } from './cells.js' */

/**
 * A session as the server describes it (GET /v1/sessions/{id}); fields
 * other than id may be missing.
 * @typedef {object} Session
 * @property {string} id
 * @property {string} [state] the kernel's state
 * @property {string} [runtime]
 * @property {string} [created_at]
 * @property {string} [expires_at]
 */

/**
 * The page's shared state.
 * @typedef {object} Store
 * @property {string} token the API key ('' when none)
 * @property {Session | null} session the open session, or null
 * @property {Cell[]} cells the notebook's cells in order
 */

// createStore returns the page's shared state:
//   token    the API key ('' when none)
//   session  the open session as the server described it
//            ({id, state, runtime, created_at, expires_at, ...}), or null
//   cells    the notebook's cells in order (see cells.js for their fields)
/** @returns {Store} */
export function createStore() {
  return {
    token: '',
    session: null,
    cells: []
  };
}
