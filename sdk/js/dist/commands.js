import { sessionPath } from './connection.js';
import { checkUser, CommandExitError, InvalidArgumentError, NotFoundError, SandboxError, TimeoutError } from './errors.js';
import { CommandEvents } from './events.js';
import { toWorkspacePath } from './paths.js';
const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;
/**
 * A running (or finished) command: its output so far, `wait()` for its
 * end, `kill()`, `sendStdin()`.
 */
export class CommandHandle {
    pid;
    cmds;
    onStdout;
    onStderr;
    out = '';
    errOut = '';
    result;
    timedOut = false;
    done;
    finish;
    failure;
    unwatch;
    chain = Promise.resolve();
    /** @internal */
    constructor(pid, cmds, onStdout, onStderr) {
        this.pid = pid;
        this.cmds = cmds;
        this.onStdout = onStdout;
        this.onStderr = onStderr;
        this.done = new Promise((resolve) => {
            this.finish = (e) => {
                if (e && !this.failure)
                    this.failure = e;
                resolve();
            };
        });
    }
    /** @internal */
    attach(events) {
        this.unwatch = events.watch(this.pid, (ev) => this.onEvent(ev), (err) => this.finish(err));
    }
    onEvent(ev) {
        if (ev.name === 'stdout' || ev.name === 'stderr') {
            const text = ev.text ?? '';
            if (ev.name === 'stdout')
                this.out += text;
            else
                this.errOut += text;
            const cb = ev.name === 'stdout' ? this.onStdout : this.onStderr;
            if (cb)
                this.chain = this.chain.then(() => cb(text)).catch(() => { });
        }
        else if (ev.state === 'exited') {
            this.timedOut = !!ev.timed_out;
            this.chain.then(() => this.finish());
        }
    }
    /** stdout so far. */
    get stdout() {
        return this.result?.stdout ?? this.out;
    }
    /** stderr so far. */
    get stderr() {
        return this.result?.stderr ?? this.errOut;
    }
    /** The exit code once it ended. */
    get exitCode() {
        return this.result?.exitCode;
    }
    /** The error message once it failed. */
    get error() {
        return this.result?.error;
    }
    /**
     * Waits for the end. Resolves with the result when it exits 0; throws
     * CommandExitError otherwise, TimeoutError when it was killed at its
     * timeout or when the sandbox ended (killed, or at its end of life)
     * while it ran.
     */
    async wait() {
        await this.done;
        this.cmds._release(this);
        this.unwatch?.();
        if (!this.result) {
            // The gateway's record is the whole output even if events were missed.
            let info;
            try {
                info = await this.cmds._get(this.pid);
            }
            catch (e) {
                if (e instanceof NotFoundError && !(await this.cmds._sandboxExists())) {
                    throw new TimeoutError(`command ${this.pid} did not finish: the sandbox was killed or reached its end of life while it ran`);
                }
                throw this.failure ?? e;
            }
            if (info.running) {
                throw this.failure ?? new SandboxError(`command ${this.pid} is still running`);
            }
            this.timedOut = this.timedOut || !!info.timed_out;
            const exitCode = typeof info.exit_code === 'number' ? info.exit_code : -1;
            this.result = {
                exitCode,
                stdout: typeof info.stdout === 'string' ? info.stdout : this.out,
                stderr: typeof info.stderr === 'string' ? info.stderr : this.errOut,
                ...(exitCode !== 0 ? { error: this.timedOut ? 'command timed out' : `exit status ${exitCode}` } : {}),
            };
        }
        if (this.timedOut)
            throw new TimeoutError(`command ${this.pid} ran past its timeout and was killed`);
        if (this.result.exitCode !== 0)
            throw new CommandExitError(this.result);
        return this.result;
    }
    /** Kills the command's process group (SIGKILL). False if it had ended or does not exist. */
    async kill() {
        return this.cmds.kill(this.pid);
    }
    /** Writes to the command's stdin (started with `stdin: true` or in the background). */
    async sendStdin(data, opts) {
        return this.cmds.sendStdin(this.pid, data, opts);
    }
    /** Closes the command's stdin. */
    async closeStdin(opts) {
        return this.cmds.closeStdin(this.pid, opts);
    }
    /** Stops following the output; the command keeps running. */
    async disconnect() {
        this.unwatch?.();
        this.cmds._release(this);
        this.finish(new SandboxError('disconnected from the command'));
    }
}
/**
 * Shell commands in the sandbox (`bash -lc CMD`, in the sandbox's user,
 * workspace, environment, network policy and limits).
 */
export class Commands {
    conn;
    sandboxId;
    events;
    held = new Set();
    /** @internal */
    constructor(conn, sandboxId) {
        this.conn = conn;
        this.sandboxId = sandboxId;
        this.events = new CommandEvents(conn, sandboxId);
    }
    async run(cmd, opts = {}) {
        checkUser(opts.user);
        const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
        const body = { cmd };
        if (opts.cwd)
            body.cwd = toWorkspacePath(opts.cwd);
        if (opts.envs && Object.keys(opts.envs).length > 0)
            body.envs = opts.envs;
        if (timeoutMs > 0)
            body.timeout_s = timeoutMs / 1000;
        const path = sessionPath(this.sandboxId, 'commands');
        if (!opts.background && !opts.onStdout && !opts.onStderr && !opts.stdin) {
            // One request: the gateway answers when the command ends.
            const out = await this.conn.request('POST', path, 'json', {
                json: body,
                ok: [200],
                timeoutMs: timeoutMs > 0 ? timeoutMs + (opts.requestTimeoutMs ?? this.conn.requestTimeoutMs) : 0,
                what: 'sandbox',
            });
            const exitCode = typeof out?.exit_code === 'number' ? out.exit_code : -1;
            const result = {
                exitCode,
                stdout: String(out?.stdout ?? ''),
                stderr: String(out?.stderr ?? ''),
                ...(exitCode !== 0 ? { error: out?.timed_out ? 'command timed out' : `exit status ${exitCode}` } : {}),
            };
            if (out?.timed_out)
                throw new TimeoutError(`command ran past its timeout (${timeoutMs} ms) and was killed`);
            if (exitCode !== 0)
                throw new CommandExitError(result);
            return result;
        }
        body.background = true;
        const handle = await this._start(body, opts.onStdout, opts.onStderr, opts.requestTimeoutMs);
        if (!opts.stdin && !opts.background) {
            await this.closeStdin(handle.pid).catch(() => { });
        }
        if (opts.background)
            return handle;
        return await handle.wait();
    }
    /** @internal: starts a background command (body) and follows its events. */
    async _start(body, onStdout, onStderr, requestTimeoutMs) {
        await this.events.acquire();
        let handle;
        try {
            const started = await this.conn.request('POST', sessionPath(this.sandboxId, 'commands'), 'json', { json: body, ok: [201], timeoutMs: requestTimeoutMs, what: 'sandbox' });
            handle = new CommandHandle(Number(started.pid), this, onStdout, onStderr);
        }
        catch (e) {
            this.events.release();
            throw e;
        }
        this.held.add(handle);
        handle.attach(this.events);
        return handle;
    }
    /** Follows a running command's output again (a CommandHandle), by pid. */
    async connect(pid, opts = {}) {
        await this.events.acquire();
        const handle = new CommandHandle(pid, this, opts.onStdout, opts.onStderr);
        this.held.add(handle);
        handle.attach(this.events);
        try {
            const info = await this._get(pid, opts.requestTimeoutMs);
            if (!info.running) {
                // It ended before we watched: wait() reads its record.
                ;
                handle.finish();
            }
        }
        catch (e) {
            await handle.disconnect();
            throw e;
        }
        return handle;
    }
    /** The running commands (E2B lists running processes only). */
    async list(opts) {
        const out = await this.conn.request('GET', sessionPath(this.sandboxId, 'commands'), 'json', { timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' });
        const list = Array.isArray(out?.commands) ? out.commands : [];
        return list
            .filter((c) => opts?.includeFinished || c.running)
            .map((c) => ({
            pid: Number(c.pid),
            cmd: String(c.cmd ?? ''),
            args: [],
            envs: {},
            cwd: c.cwd,
            running: !!c.running,
            ...(typeof c.exit_code === 'number' ? { exitCode: c.exit_code } : {}),
            ...(c.started_at ? { startedAt: new Date(c.started_at) } : {}),
        }));
    }
    /** Kills a command's process group. False if it does not exist or had ended. */
    async kill(pid, opts) {
        let info;
        try {
            info = await this._get(pid, opts?.requestTimeoutMs);
        }
        catch (e) {
            if (e instanceof NotFoundError)
                return false;
            throw e;
        }
        if (!info.running)
            return false;
        try {
            await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'kill'), 'none', { ok: [204], timeoutMs: opts?.requestTimeoutMs });
            return true;
        }
        catch (e) {
            if (e instanceof NotFoundError)
                return false;
            throw e;
        }
    }
    /** Writes `data` (a string, or UTF-8 bytes) to a command's stdin. */
    async sendStdin(pid, data, opts) {
        if (data instanceof Uint8Array) {
            try {
                data = new TextDecoder('utf-8', { fatal: true }).decode(data);
            }
            catch {
                throw new InvalidArgumentError('stdin bytes must be UTF-8');
            }
        }
        if (typeof data !== 'string')
            throw new InvalidArgumentError('stdin data must be a string or a Uint8Array');
        await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'stdin'), 'none', { json: { data }, ok: [204], timeoutMs: opts?.requestTimeoutMs });
    }
    /** Closes a command's stdin (it reads EOF). */
    async closeStdin(pid, opts) {
        await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'stdin'), 'none', { json: { eof: true }, ok: [204], timeoutMs: opts?.requestTimeoutMs });
    }
    /** @internal */
    async _get(pid, timeoutMs) {
        return this.conn.request('GET', sessionPath(this.sandboxId, 'commands', String(pid)), 'json', { timeoutMs });
    }
    /** @internal: whether the sandbox is still there (a 404 says it is not). */
    async _sandboxExists() {
        try {
            await this.conn.request('GET', sessionPath(this.sandboxId), 'json', {});
            return true;
        }
        catch (e) {
            if (e instanceof NotFoundError)
                return false;
            throw e;
        }
    }
    /** @internal */
    _release(h) {
        if (this.held.delete(h))
            this.events.release();
    }
    /** @internal: stops following every command (the sandbox was killed). */
    _close() {
        for (const h of [...this.held])
            void h.disconnect();
    }
}
function bytesOf(onData) {
    if (!onData)
        return undefined;
    const enc = new TextEncoder();
    return (text) => onData(enc.encode(text));
}
/**
 * Pseudo-terminals in the sandbox (`sbx.pty`, E2B's): each an interactive
 * bash on a PTY, a command of the sandbox with its own pid, that lives
 * until it exits, is killed, reaches its timeout or the sandbox ends,
 * whoever is connected to it.
 */
export class Pty {
    conn;
    sandboxId;
    cmds;
    /** @internal */
    constructor(conn, sandboxId, cmds) {
        this.conn = conn;
        this.sandboxId = sandboxId;
        this.cmds = cmds;
    }
    /** Starts `bash -l` on a PTY of cols × rows; its handle's `onData` gets the output as bytes. */
    async create(opts) {
        checkUser(opts.user);
        const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
        const body = {
            cmd: '',
            login: true,
            envs: { LANG: 'C.UTF-8', ...(opts.envs ?? {}) },
            pty: { cols: opts.cols, rows: opts.rows },
            background: true,
        };
        if (opts.cwd)
            body.cwd = toWorkspacePath(opts.cwd);
        if (timeoutMs > 0)
            body.timeout_s = timeoutMs / 1000;
        return this.cmds._start(body, bytesOf(opts.onData), undefined, opts.requestTimeoutMs);
    }
    /** Follows a running PTY's output again, by pid. */
    async connect(pid, opts = {}) {
        return this.cmds.connect(pid, { onStdout: bytesOf(opts.onData), requestTimeoutMs: opts.requestTimeoutMs });
    }
    /** Types `data` into the PTY (`\x03` is Ctrl-C). */
    async sendInput(pid, data, opts) {
        const text = typeof data === 'string' ? data : new TextDecoder().decode(data);
        await this.cmds.sendStdin(pid, text, opts);
    }
    /** Changes the PTY's size. */
    async resize(pid, size, opts) {
        await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'resize'), 'none', {
            json: { cols: size.cols, rows: size.rows },
            ok: [204],
            timeoutMs: opts?.requestTimeoutMs,
        });
    }
    /** Kills the PTY and everything it started; false if it was not running. */
    async kill(pid, opts) {
        return this.cmds.kill(pid, opts);
    }
}
