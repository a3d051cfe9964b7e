// The state the modules share. Everything else (the WebSocket's position in
// the stream, timers, the files panel's folder, which cell runs which
// execution...) is private to the module that owns it.

// createStore returns the page's shared state:
//   token    the API key ('' when none)
//   session  the open session as the server described it
//            ({id, state, runtime, created_at, expires_at, ...}), or null
//   cells    the notebook's cells in order (see cells.js for their fields)
export function createStore() {
  return {
    token: '',
    session: null,
    cells: []
  };
}
