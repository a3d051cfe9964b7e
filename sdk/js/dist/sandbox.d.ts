import { ConnectionConfig, type ConnectionOpts } from './connection.js';
import { Commands, Pty } from './commands.js';
import { type CreateSnapshotOpts, type RestoreReport, type SnapshotInfo, type SnapshotListOpts, SnapshotPaginator } from './snapshot.js';
/** A TCP port a process of the sandbox listens on (`sbx.ports()`). */
export interface Port {
    port: number;
    /** Where it listens: 0.0.0.0, 127.0.0.1, ::, ::1. */
    address: string;
}
/** A preview of a server in the sandbox (`sbx.preview(port)`), on the gateway's preview origin. */
export interface Preview {
    port: number;
    /** Carries its own grant (E2B's getHost): works until the sandbox ends. */
    host: string;
    /** An expiring link for a browser; its token becomes a cookie of its host. */
    url: string;
    /** For the Glassroom-Preview-Token header of other programs. */
    token: string;
    expiresAt: Date;
}
import { Filesystem } from './filesystem.js';
import { Execution, ExecutionError, OutputMessage, Result } from './messaging.js';
/** A context: one kernel of the sandbox with its own language, working directory and variables. */
export interface Context {
    id: string;
    language: string;
    cwd: string;
    /** glassroom: the kernel's state. */
    state?: string;
    /** glassroom: whether it is its language's default context. */
    default?: boolean;
}
export type RunCodeLanguage = 'python' | 'javascript' | 'typescript' | 'r' | 'java' | 'bash' | (string & {});
export interface RunCodeOpts {
    onStdout?: (output: OutputMessage) => Promise<any> | any;
    onStderr?: (output: OutputMessage) => Promise<any> | any;
    onResult?: (data: Result) => Promise<any> | any;
    onError?: (error: ExecutionError) => Promise<any> | any;
    /** Environment variables for this execution only. */
    envs?: Record<string, string>;
    /** glassroom: working directory for this execution only (a workspace path that exists). */
    cwd?: string;
    /**
     * glassroom: expressions the kernel evaluates after the code, by name
     * (Jupyter's `user_expressions`; at most 32, a name of 1..256 bytes, an
     * expression of at most 4 KiB, else InvalidArgumentError); their answers
     * are in `execution.userExpressions`. The Python kernel evaluates none
     * after code that raised.
     */
    userExpressions?: Record<string, string>;
    /** How long the code may run (ms); past it it is interrupted and runCode throws TimeoutError. Default: the gateway's execution timeout. */
    timeoutMs?: number;
    /** How long to wait for the gateway beyond that (ms). */
    requestTimeoutMs?: number;
    /** Cancels the wait (the code is interrupted). */
    signal?: AbortSignal;
}
export interface CreateCodeContextOpts {
    cwd?: string;
    language?: RunCodeLanguage;
    requestTimeoutMs?: number;
}
/** Options of `Sandbox.create`. */
export interface SandboxOpts extends ConnectionOpts {
    /**
     * A template (an operator-defined preset; built in: `default`,
     * `code-interpreter-v1`). A snapshot's id here (`snap-…`, as E2B's
     * `Sandbox.create(snapshotId)`) is taken as `snapshot`.
     */
    template?: string;
    /**
     * glassroom: a snapshot of this API key's (`sbx.createSnapshot()`) to
     * start from: its workspace and its contexts' variables are restored
     * before `create` returns; `sbx.restore` says what came back. The
     * language defaults to the snapshot's.
     */
    snapshot?: string;
    /** Stored with the sandbox; `Sandbox.list({query: {metadata}})` filters on it. */
    metadata?: Record<string, string>;
    /** Environment variables of the sandbox's kernels and commands. */
    envs?: Record<string, string>;
    /** The sandbox's lifetime (ms): it is killed this long after creation (`setTimeout` moves it). Default: the gateway's maximum lifetime. */
    timeoutMs?: number;
    /** false: the sandbox's `accessToken` is not kept (E2B's `secure`; the API key works either way). */
    secure?: boolean;
    /** E2B: false means no network, which is glassroom's default; true needs `network.allow` on glassroom. */
    allowInternetAccess?: boolean;
    /**
     * glassroom: `{allow: [...], deny: [...]}`, within the operator's
     * allowlist. E2B's `allowOut` is taken as `allow`, its `denyOut` as
     * `deny` (`['0.0.0.0/0']`: only what allowOut lists; on glassroom a deny
     * wins over an allow). `allowPublicTraffic: false` makes the
     * sandbox's previews private (as `privatePreviews`). Its other settings
     * (rules, proxies, `maskRequestHost`) have no glassroom counterpart and
     * are ignored.
     */
    network?: {
        allow?: string[];
        allowOut?: unknown;
        deny?: string[];
        denyOut?: unknown;
    } & Record<string, unknown>;
    /**
     * glassroom: the sandbox's previews are private: `getHost(port)` is no
     * grant by itself, and a request needs `trafficAccessToken` in the
     * `e2b-traffic-access-token` header (E2B's `network.allowPublicTraffic: false`).
     */
    privatePreviews?: boolean;
    /** glassroom: memory_mb, cpus, pids, workspace_mb. */
    limits?: {
        memory_mb?: number;
        cpus?: number;
        pids?: number;
        workspace_mb?: number;
    };
    /** glassroom: the first context's language (default python). */
    language?: string;
    /** glassroom: this key's volumes to mount (`Volume.create`): name → a directory under /home/user. */
    volumes?: Record<string, string>;
    /** E2B: `{ path: Volume or name }`, the same mounts the other way round. */
    volumeMounts?: Record<string, {
        name: string;
    } | string>;
    /** glassroom: seconds without activity before the gateway deletes the sandbox. */
    idleTimeoutS?: number;
    /**
     * E2B's: what the sandbox does at its timeout. `onTimeout: 'kill'` (the
     * default) ends it; `'pause'` (or `{action: 'pause'}`) freezes it with
     * its memory until `connect`, or with `autoResume` its next use.
     * `{action: 'pause', keepMemory: false}` hibernates it instead: its
     * workspace and variables go to a snapshot and its sandbox is freed,
     * until `connect` wakes it (E2B's rule: not with `autoResume`).
     */
    lifecycle?: Lifecycle;
}
/** E2B's sandbox lifecycle (SandboxOpts.lifecycle). */
export interface Lifecycle {
    onTimeout?: 'kill' | 'pause' | {
        action: 'kill' | 'pause';
        keepMemory?: boolean | null;
    };
    autoResume?: boolean;
}
export type SandboxConnectOpts = ConnectionOpts & {
    timeoutMs?: number;
};
/** Options of `pause` (E2B's SandboxPauseOpts). */
export interface SandboxPauseOpts {
    /**
     * false hibernates the sandbox (E2B's filesystem-only pause): its
     * workspace and its contexts' variables go to a snapshot and its
     * sandbox is freed; it keeps its id, and uses are refused until
     * `connect` (or `resume`) wakes it, or, with its lifecycle's
     * `autoResume`, its next use. Default true: frozen with its memory.
     */
    keepMemory?: boolean;
    requestTimeoutMs?: number;
}
/** Options of `fork`. */
export interface SandboxForkOpts {
    /** How many sandboxes to start (1..8 by default; default 1). */
    count?: number;
    /** Each fork's lifetime (ms); default the Sandbox class's `defaultTimeoutMs` (E2B's 300 s in `glassroom/e2b`), else the gateway's. */
    timeoutMs?: number;
    requestTimeoutMs?: number;
}
export type SandboxState = 'running' | 'paused';
/** A sandbox as `getInfo` and `list` give it. */
export interface SandboxInfo {
    sandboxId: string;
    templateId: string;
    name?: string;
    metadata: Record<string, string>;
    startedAt: Date;
    endAt: Date;
    state: SandboxState;
    cpuCount: number;
    memoryMB: number;
    envdVersion: string;
    /** glassroom: the kernel's state (idle, busy, restarting, dead). */
    kernelState?: string;
    /** glassroom: the runtime (local, docker, k8s). */
    runtime?: string;
    /** glassroom: hibernated (`pause({ keepMemory: false })`): its sandbox freed, its state in a snapshot until `connect` wakes it. state is 'paused'. */
    hibernated?: boolean;
    /** glassroom: the session as the gateway answered it. */
    raw: Record<string, any>;
}
export interface SandboxMetrics {
    timestamp: Date;
    cpuUsedPct: number;
    cpuCount: number;
    memUsed: number;
    memTotal: number;
    memCache: number;
    diskUsed: number;
    diskTotal: number;
}
export interface SandboxListOpts extends ConnectionOpts {
    query?: {
        metadata?: Record<string, string>;
        state?: SandboxState[];
        template?: string;
        startedAfter?: Date;
        startedBefore?: Date;
    };
    limit?: number;
    nextToken?: string;
    /** 'desc' (the default, as E2B's: the newest first) or 'asc'. */
    order?: 'asc' | 'desc';
}
/** The session JSON as a SandboxInfo. */
export declare function sandboxInfo(s: any): SandboxInfo;
/** Pages of `Sandbox.list`: `while (p.hasNext) items.push(...await p.nextItems())`. */
export declare class SandboxPaginator {
    private readonly opts;
    private _hasNext;
    private _nextToken?;
    private readonly conn;
    constructor(opts?: SandboxListOpts);
    get hasNext(): boolean;
    get nextToken(): string | undefined;
    nextItems(): Promise<SandboxInfo[]>;
}
/**
 * A glassroom session (a sandbox holding persistent Jupyter kernels),
 * shaped like E2B's code-interpreter Sandbox. `Sandbox.create()` starts
 * one, `Sandbox.connect(id)` attaches to one; `kill()` ends it. Methods
 * may be called concurrently.
 */
export declare class Sandbox {
    /** E2B's default template name; glassroom's gateway has it built in. */
    protected static readonly defaultTemplate: string;
    readonly sandboxId: string;
    /** The workspace's files (/home/user). */
    readonly files: Filesystem;
    /** Shell commands in the sandbox. */
    readonly commands: Commands;
    /** Pseudo-terminals in the sandbox (E2B's `sbx.pty`). */
    readonly pty: Pty;
    /** @internal */
    readonly connectionConfig: ConnectionConfig;
    /** @internal: the session's preview_host, known once created or connected. */
    protected previewHost?: string;
    /**
     * The sandbox's access token, known once created or connected (E2B's
     * envd access token; none after `secure: false`): sent as the
     * `X-Access-Token` header instead of the API key, it grants what runs
     * inside this sandbox (code, files, commands), nothing else, until it ends.
     */
    accessToken?: string;
    /**
     * The token of a sandbox with private previews (`privatePreviews`, E2B's
     * `network.allowPublicTraffic: false`), known once created or
     * connected: in the `e2b-traffic-access-token` header, it opens
     * `getHost(port)` of any port until the sandbox ends.
     */
    trafficAccessToken?: string;
    /**
     * glassroom: what a sandbox started from a snapshot (`Sandbox.create(snapshotId)`)
     * or by `fork` got of it, per context: the variables restored and those
     * that were not, with why. Undefined for any other sandbox.
     */
    readonly restore?: RestoreReport;
    /** @internal: use Sandbox.create or Sandbox.connect. */
    constructor(opts: {
        sandboxId: string;
        previewHost?: string;
        accessToken?: string;
        trafficAccessToken?: string;
        restore?: RestoreReport;
    } & ConnectionOpts);
    /**
     * The lifetime `create` asks for when `timeoutMs` is not given:
     * undefined here (the gateway's maximum), 300 s in `glassroom/e2b`'s
     * Sandbox (E2B's default).
     */
    static readonly defaultTimeoutMs: number | undefined;
    /** @internal: a Sandbox of `s`, a session as the gateway answered its creation. */
    protected static fromSession<S extends typeof Sandbox>(this: S, conn: ConnectionConfig, s: any, secure?: boolean): InstanceType<S>;
    /**
     * Starts a sandbox. `template` (optional) names a preset of the
     * gateway's operator; without it the gateway's defaults apply. A
     * snapshot's id in its place (E2B's `Sandbox.create(snapshotId)`)
     * starts the sandbox from that snapshot (`opts.snapshot`).
     */
    static create<S extends typeof Sandbox>(this: S, opts?: SandboxOpts): Promise<InstanceType<S>>;
    static create<S extends typeof Sandbox>(this: S, template: string, opts?: SandboxOpts): Promise<InstanceType<S>>;
    /** Attaches to an existing sandbox (SandboxNotFoundError if it is gone); a paused one is resumed. */
    static connect<S extends typeof Sandbox>(this: S, sandboxId: string, opts?: SandboxConnectOpts): Promise<InstanceType<S>>;
    /**
     * Checks the sandbox is there (resuming it if a client paused it, waking
     * it if it is hibernated); with
     * `timeoutMs`, its end moves to `timeoutMs` from now if that is later
     * (as E2B's: a connect never shortens a sandbox's life).
     */
    connect(opts?: {
        timeoutMs?: number;
    }): Promise<this>;
    /** The sandboxes of this API key, page by page. */
    static list(opts?: SandboxListOpts): SandboxPaginator;
    /** Kills a sandbox by id; false if it did not exist. */
    static kill(sandboxId: string, opts?: ConnectionOpts): Promise<boolean>;
    static setTimeout(sandboxId: string, timeoutMs: number, opts?: ConnectionOpts): Promise<void>;
    static getInfo(sandboxId: string, opts?: ConnectionOpts): Promise<SandboxInfo>;
    static getMetrics(sandboxId: string, opts?: ConnectionOpts & {
        start?: Date | string | number;
        end?: Date | string | number;
    }): Promise<SandboxMetrics[]>;
    /** Pauses a sandbox by id; `keepMemory: false` hibernates it (see `pause`). */
    static pause(sandboxId: string, opts?: ConnectionOpts & SandboxPauseOpts): Promise<boolean>;
    /** E2B's name for `pause` while it was in beta. */
    static betaPause(sandboxId: string, opts?: ConnectionOpts & SandboxPauseOpts): Promise<boolean>;
    /** Snapshots a sandbox by id (see `createSnapshot`). */
    static createSnapshot(sandboxId: string, opts?: CreateSnapshotOpts & {
        requestTimeoutMs?: number;
    }): Promise<SnapshotInfo>;
    /** This API key's snapshots, newest first, page by page (E2B's); `sandboxId` keeps one sandbox's. */
    static listSnapshots(opts?: SnapshotListOpts): SnapshotPaginator;
    /** glassroom: one snapshot of this API key (a NotFoundError when it has none of that id). */
    static getSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<SnapshotInfo>;
    /** Deletes a snapshot; false if this API key had none of that id (E2B's). */
    static deleteSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<boolean>;
    /** Forks a sandbox by id (see `fork`): the forks are of this class. */
    static fork<S extends typeof Sandbox>(this: S, sandboxId: string, opts?: ConnectionOpts & SandboxForkOpts): Promise<Array<InstanceType<S> | Error>>;
    /** Deletes the sandbox (kernels, commands, files); false if it did not exist. */
    kill(opts?: {
        requestTimeoutMs?: number;
    }): Promise<boolean>;
    /**
     * Sets the sandbox's lifetime: it ends `timeoutMs` from now (capped by
     * the gateway's maximum lifetime); 0 is now: it ends, or pauses when its
     * `lifecycle` says so.
     */
    setTimeout(timeoutMs: number, opts?: {
        requestTimeoutMs?: number;
    }): Promise<void>;
    getInfo(opts?: {
        requestTimeoutMs?: number;
    }): Promise<SandboxInfo>;
    /** Whether the sandbox exists and its kernel is not dead. */
    isRunning(opts?: {
        requestTimeoutMs?: number;
    }): Promise<boolean>;
    /** CPU and memory (the sandbox's cgroup) and disk (the workspace): one sample, as a one-element list like E2B's. */
    /**
     * Replaces the sandbox's network rules while it runs (E2B's):
     * `{ allowOut, denyOut }`. New connections follow them at once and open
     * ones they refuse are closed. A sandbox created without a network has
     * none to change (a SandboxError, status 409).
     */
    updateNetwork(network: {
        allowOut?: string[];
        denyOut?: string[];
    }, opts?: {
        requestTimeoutMs?: number;
    }): Promise<void>;
    /**
     * The host of the preview of a server the sandbox runs on `port` (E2B's
     * getHost): `http(s)://` + host opens it, until the sandbox ends. The
     * gateway must serve previews (`--preview-listen`).
     */
    getHost(port: number): string;
    /** The TCP ports the sandbox's processes listen on, lowest first (its kernels' own among them). */
    ports(opts?: {
        requestTimeoutMs?: number;
    }): Promise<Port[]>;
    /**
     * The preview of `port`: `url` opens it in a browser (its token becomes
     * a cookie of the preview's host) for `expiresS` seconds (default an
     * hour, at most a day) or until the sandbox ends; `token` goes in the
     * `Glassroom-Preview-Token` header of other programs' requests.
     */
    preview(port: number, opts?: {
        expiresS?: number;
        requestTimeoutMs?: number;
    }): Promise<Preview>;
    /** A signed URL that downloads `path` without the API key (E2B's); it expires after `useSignatureExpiration` seconds (default an hour, at most a day) or with the sandbox. */
    downloadUrl(path: string, opts?: {
        user?: string;
        useSignatureExpiration?: number;
    }): Promise<string>;
    /** A signed URL that uploads `path` without the API key (E2B's): a multipart form's "file" part by POST, or the body by PUT. */
    uploadUrl(path?: string, opts?: {
        user?: string;
        useSignatureExpiration?: number;
    }): Promise<string>;
    /**
     * The sandbox's CPU, memory and disk use over time: the gateway samples
     * it every 5 s (E2B's collection interval) and keeps the last ten
     * minutes; the list holds the samples within `start`..`end` (each
     * widened by 5 s, as E2B's buckets are), oldest first, ending with a
     * sample of now when the range reaches now.
     */
    getMetrics(opts?: {
        requestTimeoutMs?: number;
        start?: Date | string | number;
        end?: Date | string | number;
    }): Promise<SandboxMetrics[]>;
    /**
     * Freezes the whole sandbox until `resume()` (or `Sandbox.connect`);
     * code and commands are refused meanwhile. `keepMemory: false`
     * hibernates it instead: its workspace and variables go to a snapshot
     * and its sandbox is freed, its id kept; uses are refused (a
     * SandboxError, code `session_hibernated`) until `connect` or `resume`
     * wakes it, or, with its lifecycle's `autoResume`, its next use does.
     */
    pause(opts?: SandboxPauseOpts): Promise<boolean>;
    /** E2B's name for `pause` while it was in beta. */
    betaPause(opts?: SandboxPauseOpts): Promise<boolean>;
    /** glassroom: thaws a paused sandbox, or wakes a hibernated one (its snapshot restored). */
    resume(opts?: {
        requestTimeoutMs?: number;
    }): Promise<void>;
    /** The request timeout of a call that snapshots or restores a sandbox: the connection's, at least two minutes (unless unlimited). */
    private get slowTimeoutMs();
    /**
     * Snapshots the sandbox (E2B's): its workspace and each context's
     * variables (those its kernel can capture: `contexts[].uncaptured` says
     * which were not, and why); it goes on running. The snapshot outlives
     * the sandbox until `Sandbox.deleteSnapshot`; `Sandbox.create(snapshotId)`
     * starts a sandbox from it. `name` (1 to 128 of A-Z a-z 0-9 . _ -)
     * labels it: `names` holds it, `listSnapshots({ name })` finds it.
     */
    createSnapshot(opts?: {
        name?: string;
        requestTimeoutMs?: number;
    }): Promise<SnapshotInfo>;
    /** The snapshots of this sandbox, newest first, page by page (E2B's). */
    listSnapshots(opts?: Omit<SnapshotListOpts, 'sandboxId'>): SnapshotPaginator;
    /**
     * Starts `count` sandboxes (default 1) from a capture of this one, each
     * with its workspace and variables (`restore` says what came back),
     * template, language, limits, network, lifecycle and metadata; this
     * sandbox goes on. Each fork succeeds or fails on its own: the list
     * holds a Sandbox or the Error that fork met, in order.
     */
    fork(opts?: SandboxForkOpts): Promise<Array<this | Error>>;
    /** glassroom: interrupts running code (of one context, or every one). */
    interrupt(context?: Context | string): Promise<void>;
    createCodeContext(opts?: CreateCodeContextOpts): Promise<Context>;
    /**
     * The sandbox's contexts. As E2B's, the list has a Python and a
     * JavaScript context from the start (PENDING_DEFAULTS: the JavaScript
     * one is listed with the id 'javascript' until its first use).
     */
    listCodeContexts(): Promise<Context[]>;
    private rawContexts;
    /** The id of a pending default's context once started; null before. */
    private startedDefault;
    restartCodeContext(context: Context | string): Promise<void>;
    removeCodeContext(context: Context | string): Promise<void>;
    /**
     * Runs code in one of the sandbox's kernels; variables persist between
     * calls. `context` runs it there; `language` in that language's default
     * context (started on first use); neither, in the first context.
     * Code that raises is not a rejection: `execution.error` is set. Past
     * `timeoutMs` the code is interrupted and this throws TimeoutError.
     */
    runCode(code: string, opts?: RunCodeOpts & {
        language?: RunCodeLanguage;
    }): Promise<Execution>;
    runCode(code: string, opts?: RunCodeOpts & {
        context?: Context;
    }): Promise<Execution>;
    /** A failure during a call, explained: a sandbox that vanished is E2B's TimeoutError. */
    private explain;
    private runWs;
}
