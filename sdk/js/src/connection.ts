import { errorFromStatus, InvalidArgumentError, SandboxError, TimeoutError } from './errors.js'

/** The gateway used when neither `baseUrl` nor GLASSROOM_URL says otherwise. */
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8888'
/** How long one HTTP request may take by default (E2B's default too). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

/** Where and how to reach a gateway. */
export interface ConnectionOpts {
  /** The API key; default GLASSROOM_API_KEY, then E2B_API_KEY. */
  apiKey?: string
  /** The gateway's URL (http or https); default GLASSROOM_URL, then http://127.0.0.1:8888. */
  baseUrl?: string
  /** E2B's name for the API URL; the same as `baseUrl`. */
  apiUrl?: string
  /** How long each request may take (ms); 0 for no limit. Default 60 000. */
  requestTimeoutMs?: number
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>
  /** Accepted for E2B compatibility; ignored (glassroom has no domains). */
  domain?: string
  /** Accepted for E2B compatibility; ignored. */
  debug?: boolean
}

/** Reads an environment variable in Node, Bun and Deno (undefined where there is no environment, or no permission to read it). */
export function getEnv(name: string): string | undefined {
  const g = globalThis as any
  try {
    const v = g.process?.env?.[name]
    if (typeof v === 'string') return v
  } catch {
    // no process.env here
  }
  try {
    const v = g.Deno?.env?.get?.(name)
    if (typeof v === 'string') return v
  } catch {
    // Deno without --allow-env
  }
  return undefined
}

/** How a request's answer is read. */
type ReadAs = 'json' | 'text' | 'bytes' | 'response' | 'none'

export interface RequestInit2 {
  query?: Record<string, string | string[] | undefined>
  json?: unknown
  body?: BodyInit
  contentType?: string
  /** Statuses that are not errors (default: any 2xx). */
  ok?: number[]
  /** ms; overrides the connection's requestTimeoutMs (0: no limit). */
  timeoutMs?: number
  /** What a 404 is about, for the error type. */
  what?: 'sandbox' | 'file' | 'other'
  signal?: AbortSignal
  /** Headers of this request only. */
  headers?: Record<string, string>
}

/**
 * A resolved connection: base URL, key, timeout. Immutable; safe to share
 * between sandboxes.
 */
export class ConnectionConfig {
  readonly apiKey: string
  readonly baseUrl: string
  readonly requestTimeoutMs: number
  readonly headers: Record<string, string>

  constructor(opts?: ConnectionOpts) {
    const key = opts?.apiKey || getEnv('GLASSROOM_API_KEY') || getEnv('E2B_API_KEY') || ''
    if (!key) {
      throw new InvalidArgumentError('an API key is required: pass apiKey or set GLASSROOM_API_KEY (or E2B_API_KEY)')
    }
    if (/[\r\n]/.test(key)) throw new InvalidArgumentError('the API key contains a line break')
    const url = (opts?.baseUrl || opts?.apiUrl || getEnv('GLASSROOM_URL') || DEFAULT_BASE_URL).replace(/\/+$/, '')
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new InvalidArgumentError(`base URL ${JSON.stringify(url)} is not a URL`)
    }
    if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !parsed.host) {
      throw new InvalidArgumentError(`base URL ${JSON.stringify(url)} must be an http(s) URL with a host`)
    }
    this.apiKey = key
    this.baseUrl = url
    this.requestTimeoutMs = opts?.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
    this.headers = { ...(opts?.headers ?? {}) }
  }

  /** The options that make this connection again (for Sandbox.connect and the like). */
  toOpts(): ConnectionOpts {
    return { apiKey: this.apiKey, baseUrl: this.baseUrl, requestTimeoutMs: this.requestTimeoutMs, headers: this.headers }
  }

  /** The base URL with a ws:// or wss:// scheme. */
  get wsUrl(): string {
    return 'ws' + this.baseUrl.slice('http'.length)
  }

  url(path: string, query?: Record<string, string | string[] | undefined>): string {
    let u = this.baseUrl + path
    if (query) {
      const q = new URLSearchParams()
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined) continue
        for (const one of Array.isArray(v) ? v : [v]) q.append(k, one)
      }
      const s = q.toString()
      if (s) u += '?' + s
    }
    return u
  }

  /**
   * Does one request. Errors: the gateway's answer mapped to E2B's error
   * types; TimeoutError past the timeout; SandboxError when the gateway
   * cannot be reached.
   */
  async request(method: string, path: string, as: 'json', init?: RequestInit2): Promise<any>
  async request(method: string, path: string, as: 'text', init?: RequestInit2): Promise<string>
  async request(method: string, path: string, as: 'bytes', init?: RequestInit2): Promise<Uint8Array>
  async request(method: string, path: string, as: 'response', init?: RequestInit2): Promise<Response>
  async request(method: string, path: string, as: 'none', init?: RequestInit2): Promise<number>
  async request(method: string, path: string, as: ReadAs, init: RequestInit2 = {}): Promise<any> {
    const headers: Record<string, string> = {
      ...this.headers,
      ...(init.headers ?? {}),
      Authorization: 'Bearer ' + this.apiKey,
    }
    let body: BodyInit | undefined = init.body
    if (init.json !== undefined) {
      body = JSON.stringify(init.json)
      headers['Content-Type'] = 'application/json'
    } else if (init.contentType) {
      headers['Content-Type'] = init.contentType
    }
    const timeoutMs = init.timeoutMs ?? this.requestTimeoutMs
    const ctl = new AbortController()
    let timedOut = false
    const timer = timeoutMs > 0 ? setTimeout(() => { timedOut = true; ctl.abort() }, timeoutMs) : undefined
    const onAbort = () => ctl.abort()
    init.signal?.addEventListener('abort', onAbort)
    const url = this.url(path, init.query)
    try {
      let res: Response
      try {
        res = await fetch(url, { method, headers, body, signal: ctl.signal, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit)
      } catch (e) {
        if (timedOut) throw new TimeoutError(`${method} ${path}: no answer within ${timeoutMs} ms`, { cause: e })
        if (init.signal?.aborted) throw e
        throw new SandboxError(`could not reach the glassroom gateway at ${this.baseUrl}: ${(e as Error)?.message ?? e}`, { cause: e })
      }
      const okList = init.ok
      const good = okList ? okList.includes(res.status) : res.status >= 200 && res.status < 300
      if (!good) {
        const raw = await res.text().catch(() => '')
        let code = ''
        let message = raw.trim().slice(0, 512)
        try {
          const j = JSON.parse(raw)
          if (j && typeof j === 'object' && j.error && typeof j.error === 'object') {
            code = String(j.error.code ?? '')
            message = String(j.error.message ?? message)
          }
        } catch {
          // not JSON: keep the text
        }
        throw errorFromStatus(res.status, code, message, init.what)
      }
      try {
        switch (as) {
          case 'response':
            return res
          case 'none':
            await res.body?.cancel()
            return res.status
          case 'text':
            return await res.text()
          case 'bytes':
            return new Uint8Array(await res.arrayBuffer())
          case 'json': {
            const raw = await res.text()
            if (!raw) return null
            try {
              return JSON.parse(raw)
            } catch {
              throw new SandboxError(`${method} ${path}: the gateway answered something that is not JSON`)
            }
          }
        }
      } catch (e) {
        if (timedOut) throw new TimeoutError(`${method} ${path}: the answer stalled past ${timeoutMs} ms`, { cause: e })
        throw e
      }
    } finally {
      if (as !== 'response' && timer) clearTimeout(timer)
      init.signal?.removeEventListener('abort', onAbort)
    }
  }
}

/** The subset of the WebSocket API the SDK uses (browsers', undici's, Deno's, Bun's and `ws`'s). */
export interface WebSocketLike {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  onopen: ((ev: any) => void) | null
  onmessage: ((ev: { data: any }) => void) | null
  onerror: ((ev: any) => void) | null
  onclose: ((ev: { code: number; reason: string }) => void) | null
}

type WebSocketCtor = new (url: string) => WebSocketLike

let wsCtor: Promise<WebSocketCtor> | undefined

/**
 * The runtime's WebSocket class: the global one (Node 22+, Deno, Bun,
 * browsers), else the optional `ws` package, loaded on first use.
 */
export function webSocketClass(): Promise<WebSocketCtor> {
  if (!wsCtor) {
    const g = (globalThis as any).WebSocket
    if (typeof g === 'function') {
      wsCtor = Promise.resolve(g as WebSocketCtor)
    } else {
      const name = 'ws' // a variable: bundlers for runtimes with a WebSocket need not resolve it
      wsCtor = import(name).then(
        (m: any) => (m.WebSocket ?? m.default) as WebSocketCtor,
        (e: unknown) => {
          wsCtor = undefined
          throw new SandboxError('this runtime has no global WebSocket: install the optional dependency `ws` (npm install ws)', { cause: e })
        }
      )
    }
  }
  return wsCtor
}

/**
 * Opens a WebSocket to `path` on the gateway, authenticated with
 * `?token=` (browsers' and undici's WebSocket cannot send headers).
 * Resolves once open; rejects with a SandboxError (or a mapped HTTP error
 * when the runtime reports the status) when it cannot open.
 */
export async function openWebSocket(conn: ConnectionConfig, path: string, query?: Record<string, string>, timeoutMs = conn.requestTimeoutMs): Promise<WebSocketLike> {
  const Ctor = await webSocketClass()
  const q = new URLSearchParams({ ...(query ?? {}), token: conn.apiKey })
  const ws = new Ctor(conn.wsUrl + path + '?' + q.toString())
  return await new Promise<WebSocketLike>((resolve, reject) => {
    const timer = timeoutMs > 0 ? setTimeout(() => { fail(new TimeoutError(`opening the WebSocket to ${conn.baseUrl}: no answer within ${timeoutMs} ms`)); ws.close() }, timeoutMs) : undefined
    let settled = false
    const fail = (e: Error) => {
      if (settled) return
      settled = true
      if (timer) clearTimeout(timer)
      reject(e)
    }
    ws.onopen = () => {
      if (settled) return
      settled = true
      if (timer) clearTimeout(timer)
      ws.onopen = ws.onerror = ws.onclose = null
      resolve(ws)
    }
    ws.onerror = (ev: any) => {
      fail(new SandboxError(`could not open a WebSocket to ${conn.baseUrl}${path}: ${ev?.message ?? ev?.error?.message ?? 'refused (the sandbox may not exist)'}`))
    }
    ws.onclose = (ev) => fail(new SandboxError(`the gateway closed the WebSocket at once (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''})`))
  })
}

/** The text of a WebSocket message (string, Buffer, ArrayBuffer). */
export function frameText(data: any): string {
  if (typeof data === 'string') return data
  if (data instanceof ArrayBuffer) return new TextDecoder().decode(data)
  if (ArrayBuffer.isView(data)) return new TextDecoder().decode(data as Uint8Array)
  return String(data)
}

/** `/v1/sessions/{id}` plus escaped segments. */
export function sessionPath(id: string, ...rest: string[]): string {
  if (!id || typeof id !== 'string') throw new InvalidArgumentError('a sandbox id is required')
  let p = '/v1/sessions/' + encodeURIComponent(id)
  for (const r of rest) p += '/' + r
  return p
}
