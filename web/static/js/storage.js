// @ts-check
// localStorage that never throws (private mode, quota, disabled storage).

export const LS_TOKEN = 'glassroom.token';
export const LS_LAST_SESSION = 'glassroom.lastSession';
export const LS_NOTEBOOK = 'glassroom.notebook';
export const LS_NOTEBOOK_PATH = 'glassroom.notebookPath'; // the notebook's file in the workspace

/**
 * @param {string} k
 * @returns {string | null}
 */
export function lsGet(k) {
  try {
    return globalThis.localStorage.getItem(k);
  } catch (_) {
    return null;
  }
}

// lsSet reports whether the value was stored.
/**
 * @param {string} k
 * @param {string} v
 * @returns {boolean}
 */
export function lsSet(k, v) {
  try {
    globalThis.localStorage.setItem(k, v);
    return true;
  } catch (_) {
    return false;
  }
}

/** @param {string} k */
export function lsDel(k) {
  try {
    globalThis.localStorage.removeItem(k);
  } catch (_) {
    /* ignore */
  }
}
