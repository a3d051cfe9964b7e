/** The gateway used when neither `baseUrl` nor GLASSROOM_URL says otherwise. */
export declare const DEFAULT_BASE_URL = "http://127.0.0.1:8888";
/** How long one HTTP request may take by default (E2B's default too). */
export declare const DEFAULT_REQUEST_TIMEOUT_MS = 60000;
/** Where and how to reach a gateway. */
export interface ConnectionOpts {
    /** The API key; default GLASSROOM_API_KEY, then E2B_API_KEY. */
    apiKey?: string;
    /** The gateway's URL (http or https); default GLASSROOM_URL, then http://127.0.0.1:8888. */
    baseUrl?: string;
    /** E2B's name for the API URL; the same as `baseUrl`. */
    apiUrl?: string;
    /** How long each request may take (ms); 0 for no limit. Default 60 000. */
    requestTimeoutMs?: number;
    /** Extra HTTP headers sent with every request. */
    headers?: Record<string, string>;
    /** Accepted for E2B compatibility; ignored (glassroom has no domains). */
    domain?: string;
    /** Accepted for E2B compatibility; ignored. */
    debug?: boolean;
}
/** Reads an environment variable in Node, Bun and Deno (undefined where there is no environment, or no permission to read it). */
export declare function getEnv(name: string): string | undefined;
export interface RequestInit2 {
    query?: Record<string, string | string[] | undefined>;
    json?: unknown;
    body?: BodyInit;
    contentType?: string;
    /** Statuses that are not errors (default: any 2xx). */
    ok?: number[];
    /** ms; overrides the connection's requestTimeoutMs (0: no limit). */
    timeoutMs?: number;
    /** What a 404 is about, for the error type. */
    what?: 'sandbox' | 'file' | 'other';
    signal?: AbortSignal;
    /** Headers of this request only. */
    headers?: Record<string, string>;
}
/**
 * A resolved connection: base URL, key, timeout. Immutable; safe to share
 * between sandboxes.
 */
export declare class ConnectionConfig {
    readonly apiKey: string;
    readonly baseUrl: string;
    readonly requestTimeoutMs: number;
    readonly headers: Record<string, string>;
    constructor(opts?: ConnectionOpts);
    /** The options that make this connection again (for Sandbox.connect and the like). */
    toOpts(): ConnectionOpts;
    /** The base URL with a ws:// or wss:// scheme. */
    get wsUrl(): string;
    url(path: string, query?: Record<string, string | string[] | undefined>): string;
    /**
     * Does one request. Errors: the gateway's answer mapped to E2B's error
     * types; TimeoutError past the timeout; SandboxError when the gateway
     * cannot be reached.
     */
    request(method: string, path: string, as: 'json', init?: RequestInit2): Promise<any>;
    request(method: string, path: string, as: 'text', init?: RequestInit2): Promise<string>;
    request(method: string, path: string, as: 'bytes', init?: RequestInit2): Promise<Uint8Array>;
    request(method: string, path: string, as: 'response', init?: RequestInit2): Promise<Response>;
    request(method: string, path: string, as: 'none', init?: RequestInit2): Promise<number>;
}
/** The subset of the WebSocket API the SDK uses (browsers', undici's, Deno's, Bun's and `ws`'s). */
export interface WebSocketLike {
    readonly readyState: number;
    send(data: string): void;
    close(code?: number, reason?: string): void;
    onopen: ((ev: any) => void) | null;
    onmessage: ((ev: {
        data: any;
    }) => void) | null;
    onerror: ((ev: any) => void) | null;
    onclose: ((ev: {
        code: number;
        reason: string;
    }) => void) | null;
}
type WebSocketCtor = new (url: string) => WebSocketLike;
/**
 * The runtime's WebSocket class: the global one (Node 22+, Deno, Bun,
 * browsers), else the optional `ws` package, loaded on first use.
 */
export declare function webSocketClass(): Promise<WebSocketCtor>;
/**
 * Opens a WebSocket to `path` on the gateway, authenticated with
 * `?token=` (browsers' and undici's WebSocket cannot send headers).
 * Resolves once open; rejects with a SandboxError (or a mapped HTTP error
 * when the runtime reports the status) when it cannot open.
 */
export declare function openWebSocket(conn: ConnectionConfig, path: string, query?: Record<string, string>, timeoutMs?: number): Promise<WebSocketLike>;
/** The text of a WebSocket message (string, Buffer, ArrayBuffer). */
export declare function frameText(data: any): string;
/** `/v1/sessions/{id}` plus escaped segments. */
export declare function sessionPath(id: string, ...rest: string[]): string;
export {};
