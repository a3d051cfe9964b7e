// @ts-check
// REST client for the gateway's /v1 API.

/** @import { Store } from './store.js' */

/**
 * @typedef {object} RequestOptions
 * @property {unknown} [json] sent as a JSON body
 * @property {FormData} [form] sent as multipart
 * @property {Blob} [blob] sent as the raw body (a file's bytes)
 * @property {AbortSignal} [signal] aborts the request
 * @property {boolean} [raw] resolve to the Response itself
 */

/**
 * Calls the API: resolves to the decoded JSON answer (null for 204 or a
 * non-JSON body; the Response with opts.raw), rejects with an ApiError.
 * The answer is the server's JSON, unchecked.
 * @typedef {(method: string, path: string, opts?: RequestOptions) => Promise<any>} Request
 */

// ApiError is what every failed call rejects with: status is the HTTP status
// (0 for a network failure), code the server's error code.
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// createApi returns request(method, path, opts), which sends the store's API
// key and resolves to the decoded JSON answer (null for 204 or a non-JSON
// body), or the Response itself with opts.raw. opts.json is sent as a JSON
// body, opts.form as multipart; opts.signal aborts it. It rejects with an
// ApiError.
/**
 * @param {Store} store
 * @returns {Request}
 */
export function createApi(store) {
  return function request(method, path, opts) {
    const o = opts || {};
    /** @type {{[name: string]: string}} */
    const headers = {};
    if (store.token) headers['Authorization'] = 'Bearer ' + store.token;
    /** @type {BodyInit | null} */
    let body = null;
    if (o.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(o.json);
    } else if (o.form) {
      body = o.form;
    } else if (o.blob) {
      headers['Content-Type'] = 'application/octet-stream';
      body = o.blob;
    }
    return fetch(path, {
      method,
      headers,
      body,
      cache: 'no-store',
      credentials: 'same-origin',
      redirect: 'error',
      signal: o.signal || null
    }).then(
      (resp) => {
        if (!resp.ok) {
          let code = 'http_' + resp.status;
          let message = resp.status + ' ' + (resp.statusText || 'error');
          return resp
            .json()
            .catch(() => null)
            .then((j) => {
              if (j && j.error) {
                if (j.error.code) code = String(j.error.code);
                if (j.error.message) message = String(j.error.message);
              }
              if (resp.status === 401) message = 'API key rejected: ' + message;
              throw new ApiError(resp.status, code, message);
            });
        }
        if (o.raw) return resp;
        if (resp.status === 204) return null;
        const ct = resp.headers.get('Content-Type') || '';
        if (ct.indexOf('json') >= 0) return resp.json();
        return null;
      },
      (err) => {
        throw new ApiError(0, 'network', 'Network error: ' + (err && err.message ? err.message : err));
      }
    );
  };
}

// sessionPath is the API path of the session id, plus suffix.
/**
 * @param {string} id
 * @param {string} [suffix]
 * @returns {string}
 */
export function sessionPath(id, suffix) {
  return '/v1/sessions/' + encodeURIComponent(id) + (suffix || '');
}
