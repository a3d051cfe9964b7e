import { type ConnectionConfig } from './connection.js';
import { type CommandResult } from './errors.js';
import { CommandEvents } from './events.js';
export type { CommandResult } from './errors.js';
/** Options of every command call. */
export interface CommandRequestOpts {
    /** How long the HTTP request may take (ms). */
    requestTimeoutMs?: number;
}
/** Options of `commands.run`. */
export interface CommandStartOpts extends CommandRequestOpts {
    /** Return a CommandHandle at once instead of waiting for the end. */
    background?: boolean;
    /** Working directory (a workspace path; default /home/user). */
    cwd?: string;
    /** E2B's: only 'user', the sandbox's one (unprivileged) user; another is refused (checkUser). */
    user?: string;
    /** Environment variables added for this command. */
    envs?: Record<string, string>;
    /** Called with each chunk of stdout as it comes. */
    onStdout?: (data: string) => void | Promise<void>;
    /** Called with each chunk of stderr as it comes. */
    onStderr?: (data: string) => void | Promise<void>;
    /** Keep stdin open for `sendStdin` (default: closed at once, as in E2B). */
    stdin?: boolean;
    /**
     * How long the command may run (ms); past it its process group is
     * killed and `run`/`wait` throw TimeoutError. Default 60 000 (E2B's);
     * 0: no limit.
     */
    timeoutMs?: number;
}
/** Options of `commands.connect`. */
export type CommandConnectOpts = Pick<CommandStartOpts, 'onStdout' | 'onStderr' | 'timeoutMs'> & CommandRequestOpts;
/** A command the sandbox runs or ran. */
export interface ProcessInfo {
    /** The command's process id in the sandbox (on the local runtime, the session's own number). */
    pid: number;
    tag?: string;
    /** The command line (it runs as `bash -lc cmd`). */
    cmd: string;
    args: string[];
    envs: Record<string, string>;
    cwd?: string;
    /** glassroom: whether it still runs; exitCode once it ended. */
    running: boolean;
    exitCode?: number;
    startedAt?: Date;
}
/**
 * A running (or finished) command: its output so far, `wait()` for its
 * end, `kill()`, `sendStdin()`.
 */
export declare class CommandHandle implements Partial<CommandResult> {
    readonly pid: number;
    private readonly cmds;
    private readonly onStdout?;
    private readonly onStderr?;
    private out;
    private errOut;
    private result?;
    private timedOut;
    private readonly done;
    private finish;
    private failure?;
    private unwatch?;
    private chain;
    /** @internal */
    constructor(pid: number, cmds: Commands, onStdout?: ((data: string) => void | Promise<void>) | undefined, onStderr?: ((data: string) => void | Promise<void>) | undefined);
    /** @internal */
    attach(events: CommandEvents): void;
    private onEvent;
    /** stdout so far. */
    get stdout(): string;
    /** stderr so far. */
    get stderr(): string;
    /** The exit code once it ended. */
    get exitCode(): number | undefined;
    /** The error message once it failed. */
    get error(): string | undefined;
    /**
     * Waits for the end. Resolves with the result when it exits 0; throws
     * CommandExitError otherwise, TimeoutError when it was killed at its
     * timeout or when the sandbox ended (killed, or at its end of life)
     * while it ran.
     */
    wait(): Promise<CommandResult>;
    /** Kills the command's process group (SIGKILL). False if it had ended or does not exist. */
    kill(): Promise<boolean>;
    /** Writes to the command's stdin (started with `stdin: true` or in the background). */
    sendStdin(data: string | Uint8Array, opts?: CommandRequestOpts): Promise<void>;
    /** Closes the command's stdin. */
    closeStdin(opts?: CommandRequestOpts): Promise<void>;
    /** Stops following the output; the command keeps running. */
    disconnect(): Promise<void>;
}
/**
 * Shell commands in the sandbox (`bash -lc CMD`, in the sandbox's user,
 * workspace, environment, network policy and limits).
 */
export declare class Commands {
    private readonly conn;
    private readonly sandboxId;
    private readonly events;
    private readonly held;
    /** @internal */
    constructor(conn: ConnectionConfig, sandboxId: string);
    /**
     * Runs a command. In the foreground (default) it resolves with its
     * result when it exits 0 and throws CommandExitError otherwise; with
     * `background: true` it resolves at once with a CommandHandle.
     */
    run(cmd: string, opts: CommandStartOpts & {
        background: true;
    }): Promise<CommandHandle>;
    run(cmd: string, opts?: CommandStartOpts & {
        background?: false | undefined;
    }): Promise<CommandResult>;
    run(cmd: string, opts?: CommandStartOpts): Promise<CommandHandle | CommandResult>;
    /** @internal: starts a background command (body) and follows its events. */
    _start(body: Record<string, unknown>, onStdout?: (data: string) => void | Promise<void>, onStderr?: (data: string) => void | Promise<void>, requestTimeoutMs?: number): Promise<CommandHandle>;
    /** Follows a running command's output again (a CommandHandle), by pid. */
    connect(pid: number, opts?: CommandConnectOpts): Promise<CommandHandle>;
    /** The running commands (E2B lists running processes only). */
    list(opts?: CommandRequestOpts & {
        includeFinished?: boolean;
    }): Promise<ProcessInfo[]>;
    /** Kills a command's process group. False if it does not exist or had ended. */
    kill(pid: number, opts?: CommandRequestOpts): Promise<boolean>;
    /** Writes `data` (a string, or UTF-8 bytes) to a command's stdin. */
    sendStdin(pid: number, data: string | Uint8Array, opts?: CommandRequestOpts): Promise<void>;
    /** Closes a command's stdin (it reads EOF). */
    closeStdin(pid: number, opts?: CommandRequestOpts): Promise<void>;
    /** @internal */
    _get(pid: number, timeoutMs?: number): Promise<any>;
    /** @internal: whether the sandbox is still there (a 404 says it is not). */
    _sandboxExists(): Promise<boolean>;
    /** @internal */
    _release(h: CommandHandle): void;
    /** @internal: stops following every command (the sandbox was killed). */
    _close(): void;
}
/** Options of `pty.create` (E2B's). */
export interface PtyCreateOpts extends CommandRequestOpts {
    cols: number;
    rows: number;
    /** Called with each chunk of the terminal's output, as bytes. */
    onData?: (data: Uint8Array) => void | Promise<void>;
    cwd?: string;
    /** E2B's: only 'user', the sandbox's one (unprivileged) user. */
    user?: string;
    envs?: Record<string, string>;
    /** How long the terminal may live (ms; default 60 000, E2B's); 0: no limit. */
    timeoutMs?: number;
}
/** Options of `pty.connect` (E2B's). */
export interface PtyConnectOpts extends CommandRequestOpts {
    onData?: (data: Uint8Array) => void | Promise<void>;
    timeoutMs?: number;
}
/**
 * Pseudo-terminals in the sandbox (`sbx.pty`, E2B's): each an interactive
 * bash on a PTY, a command of the sandbox with its own pid, that lives
 * until it exits, is killed, reaches its timeout or the sandbox ends,
 * whoever is connected to it.
 */
export declare class Pty {
    private readonly conn;
    private readonly sandboxId;
    private readonly cmds;
    /** @internal */
    constructor(conn: ConnectionConfig, sandboxId: string, cmds: Commands);
    /** Starts `bash -l` on a PTY of cols × rows; its handle's `onData` gets the output as bytes. */
    create(opts: PtyCreateOpts): Promise<CommandHandle>;
    /** Follows a running PTY's output again, by pid. */
    connect(pid: number, opts?: PtyConnectOpts): Promise<CommandHandle>;
    /** Types `data` into the PTY (`\x03` is Ctrl-C). */
    sendInput(pid: number, data: Uint8Array | string, opts?: CommandRequestOpts): Promise<void>;
    /** Changes the PTY's size. */
    resize(pid: number, size: {
        cols: number;
        rows: number;
    }, opts?: CommandRequestOpts): Promise<void>;
    /** Kills the PTY and everything it started; false if it was not running. */
    kill(pid: number, opts?: CommandRequestOpts): Promise<boolean>;
}
