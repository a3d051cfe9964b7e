import { errorFromStatus, InvalidArgumentError, SandboxError, TimeoutError } from './errors.js';
/** The gateway used when neither `baseUrl` nor GLASSROOM_URL says otherwise. */
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8888';
/** How long one HTTP request may take by default (E2B's default too). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Reads an environment variable in Node, Bun and Deno (undefined where there is no environment, or no permission to read it). */
export function getEnv(name) {
    const g = globalThis;
    try {
        const v = g.process?.env?.[name];
        if (typeof v === 'string')
            return v;
    }
    catch {
        // no process.env here
    }
    try {
        const v = g.Deno?.env?.get?.(name);
        if (typeof v === 'string')
            return v;
    }
    catch {
        // Deno without --allow-env
    }
    return undefined;
}
/**
 * A resolved connection: base URL, key, timeout. Immutable; safe to share
 * between sandboxes.
 */
export class ConnectionConfig {
    apiKey;
    baseUrl;
    requestTimeoutMs;
    headers;
    constructor(opts) {
        const key = opts?.apiKey || getEnv('GLASSROOM_API_KEY') || getEnv('E2B_API_KEY') || '';
        if (!key) {
            throw new InvalidArgumentError('an API key is required: pass apiKey or set GLASSROOM_API_KEY (or E2B_API_KEY)');
        }
        if (/[\r\n]/.test(key))
            throw new InvalidArgumentError('the API key contains a line break');
        const url = (opts?.baseUrl || opts?.apiUrl || getEnv('GLASSROOM_URL') || DEFAULT_BASE_URL).replace(/\/+$/, '');
        let parsed;
        try {
            parsed = new URL(url);
        }
        catch {
            throw new InvalidArgumentError(`base URL ${JSON.stringify(url)} is not a URL`);
        }
        if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !parsed.host) {
            throw new InvalidArgumentError(`base URL ${JSON.stringify(url)} must be an http(s) URL with a host`);
        }
        this.apiKey = key;
        this.baseUrl = url;
        this.requestTimeoutMs = opts?.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
        this.headers = { ...(opts?.headers ?? {}) };
    }
    /** The options that make this connection again (for Sandbox.connect and the like). */
    toOpts() {
        return { apiKey: this.apiKey, baseUrl: this.baseUrl, requestTimeoutMs: this.requestTimeoutMs, headers: this.headers };
    }
    /** The base URL with a ws:// or wss:// scheme. */
    get wsUrl() {
        return 'ws' + this.baseUrl.slice('http'.length);
    }
    url(path, query) {
        let u = this.baseUrl + path;
        if (query) {
            const q = new URLSearchParams();
            for (const [k, v] of Object.entries(query)) {
                if (v === undefined)
                    continue;
                for (const one of Array.isArray(v) ? v : [v])
                    q.append(k, one);
            }
            const s = q.toString();
            if (s)
                u += '?' + s;
        }
        return u;
    }
    async request(method, path, as, init = {}) {
        const headers = {
            ...this.headers,
            ...(init.headers ?? {}),
            Authorization: 'Bearer ' + this.apiKey,
        };
        let body = init.body;
        if (init.json !== undefined) {
            body = JSON.stringify(init.json);
            headers['Content-Type'] = 'application/json';
        }
        else if (init.contentType) {
            headers['Content-Type'] = init.contentType;
        }
        const timeoutMs = init.timeoutMs ?? this.requestTimeoutMs;
        const ctl = new AbortController();
        let timedOut = false;
        const timer = timeoutMs > 0 ? setTimeout(() => { timedOut = true; ctl.abort(); }, timeoutMs) : undefined;
        const onAbort = () => ctl.abort();
        init.signal?.addEventListener('abort', onAbort);
        const url = this.url(path, init.query);
        try {
            let res;
            try {
                res = await fetch(url, { method, headers, body, signal: ctl.signal, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) });
            }
            catch (e) {
                if (timedOut)
                    throw new TimeoutError(`${method} ${path}: no answer within ${timeoutMs} ms`, { cause: e });
                if (init.signal?.aborted)
                    throw e;
                throw new SandboxError(`could not reach the glassroom gateway at ${this.baseUrl}: ${e?.message ?? e}`, { cause: e });
            }
            const okList = init.ok;
            const good = okList ? okList.includes(res.status) : res.status >= 200 && res.status < 300;
            if (!good) {
                const raw = await res.text().catch(() => '');
                let code = '';
                let message = raw.trim().slice(0, 512);
                try {
                    const j = JSON.parse(raw);
                    if (j && typeof j === 'object' && j.error && typeof j.error === 'object') {
                        code = String(j.error.code ?? '');
                        message = String(j.error.message ?? message);
                    }
                }
                catch {
                    // not JSON: keep the text
                }
                throw errorFromStatus(res.status, code, message, init.what);
            }
            try {
                switch (as) {
                    case 'response':
                        return res;
                    case 'none':
                        await res.body?.cancel();
                        return res.status;
                    case 'text':
                        return await res.text();
                    case 'bytes':
                        return new Uint8Array(await res.arrayBuffer());
                    case 'json': {
                        const raw = await res.text();
                        if (!raw)
                            return null;
                        try {
                            return JSON.parse(raw);
                        }
                        catch {
                            throw new SandboxError(`${method} ${path}: the gateway answered something that is not JSON`);
                        }
                    }
                }
            }
            catch (e) {
                if (timedOut)
                    throw new TimeoutError(`${method} ${path}: the answer stalled past ${timeoutMs} ms`, { cause: e });
                throw e;
            }
        }
        finally {
            if (as !== 'response' && timer)
                clearTimeout(timer);
            init.signal?.removeEventListener('abort', onAbort);
        }
    }
}
let wsCtor;
/**
 * The runtime's WebSocket class: the global one (Node 22+, Deno, Bun,
 * browsers), else the optional `ws` package, loaded on first use.
 */
export function webSocketClass() {
    if (!wsCtor) {
        const g = globalThis.WebSocket;
        if (typeof g === 'function') {
            wsCtor = Promise.resolve(g);
        }
        else {
            const name = 'ws'; // a variable: bundlers for runtimes with a WebSocket need not resolve it
            wsCtor = import(name).then((m) => (m.WebSocket ?? m.default), (e) => {
                wsCtor = undefined;
                throw new SandboxError('this runtime has no global WebSocket: install the optional dependency `ws` (npm install ws)', { cause: e });
            });
        }
    }
    return wsCtor;
}
/**
 * Opens a WebSocket to `path` on the gateway, authenticated with
 * `?token=` (browsers' and undici's WebSocket cannot send headers).
 * Resolves once open; rejects with a SandboxError (or a mapped HTTP error
 * when the runtime reports the status) when it cannot open.
 */
export async function openWebSocket(conn, path, query, timeoutMs = conn.requestTimeoutMs) {
    const Ctor = await webSocketClass();
    const q = new URLSearchParams({ ...(query ?? {}), token: conn.apiKey });
    const ws = new Ctor(conn.wsUrl + path + '?' + q.toString());
    return await new Promise((resolve, reject) => {
        const timer = timeoutMs > 0 ? setTimeout(() => { fail(new TimeoutError(`opening the WebSocket to ${conn.baseUrl}: no answer within ${timeoutMs} ms`)); ws.close(); }, timeoutMs) : undefined;
        let settled = false;
        const fail = (e) => {
            if (settled)
                return;
            settled = true;
            if (timer)
                clearTimeout(timer);
            reject(e);
        };
        ws.onopen = () => {
            if (settled)
                return;
            settled = true;
            if (timer)
                clearTimeout(timer);
            ws.onopen = ws.onerror = ws.onclose = null;
            resolve(ws);
        };
        ws.onerror = (ev) => {
            fail(new SandboxError(`could not open a WebSocket to ${conn.baseUrl}${path}: ${ev?.message ?? ev?.error?.message ?? 'refused (the sandbox may not exist)'}`));
        };
        ws.onclose = (ev) => fail(new SandboxError(`the gateway closed the WebSocket at once (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''})`));
    });
}
/** The text of a WebSocket message (string, Buffer, ArrayBuffer). */
export function frameText(data) {
    if (typeof data === 'string')
        return data;
    if (data instanceof ArrayBuffer)
        return new TextDecoder().decode(data);
    if (ArrayBuffer.isView(data))
        return new TextDecoder().decode(data);
    return String(data);
}
/** `/v1/sessions/{id}` plus escaped segments. */
export function sessionPath(id, ...rest) {
    if (!id || typeof id !== 'string')
        throw new InvalidArgumentError('a sandbox id is required');
    let p = '/v1/sessions/' + encodeURIComponent(id);
    for (const r of rest)
        p += '/' + r;
    return p;
}
