import { type ConnectionConfig, sessionPath } from './connection.js'
import { checkUser, CommandExitError, type CommandResult, InvalidArgumentError, NotFoundError, SandboxError, TimeoutError } from './errors.js'
import { CommandEvents, type CommandEvent } from './events.js'
import { toWorkspacePath } from './paths.js'

export type { CommandResult } from './errors.js'

/** Options of every command call. */
export interface CommandRequestOpts {
  /** How long the HTTP request may take (ms). */
  requestTimeoutMs?: number
}

/** Options of `commands.run`. */
export interface CommandStartOpts extends CommandRequestOpts {
  /** Return a CommandHandle at once instead of waiting for the end. */
  background?: boolean
  /** Working directory (a workspace path; default /home/user). */
  cwd?: string
  /** E2B's: only 'user', the sandbox's one (unprivileged) user; another is refused (checkUser). */
  user?: string
  /** Environment variables added for this command. */
  envs?: Record<string, string>
  /** Called with each chunk of stdout as it comes. */
  onStdout?: (data: string) => void | Promise<void>
  /** Called with each chunk of stderr as it comes. */
  onStderr?: (data: string) => void | Promise<void>
  /** Keep stdin open for `sendStdin` (default: closed at once, as in E2B). */
  stdin?: boolean
  /**
   * How long the command may run (ms); past it its process group is
   * killed and `run`/`wait` throw TimeoutError. Default 60 000 (E2B's);
   * 0: no limit.
   */
  timeoutMs?: number
}

/** Options of `commands.connect`. */
export type CommandConnectOpts = Pick<CommandStartOpts, 'onStdout' | 'onStderr' | 'timeoutMs'> & CommandRequestOpts

/** A command the sandbox runs or ran. */
export interface ProcessInfo {
  /** The command's process id in the sandbox (on the local runtime, the session's own number). */
  pid: number
  tag?: string
  /** The command line (it runs as `bash -lc cmd`). */
  cmd: string
  args: string[]
  envs: Record<string, string>
  cwd?: string
  /** glassroom: whether it still runs; exitCode once it ended. */
  running: boolean
  exitCode?: number
  startedAt?: Date
}

const DEFAULT_COMMAND_TIMEOUT_MS = 60_000

/**
 * A running (or finished) command: its output so far, `wait()` for its
 * end, `kill()`, `sendStdin()`.
 */
export class CommandHandle implements Partial<CommandResult> {
  private out = ''
  private errOut = ''
  private result?: CommandResult
  private timedOut = false
  private readonly done: Promise<void>
  private finish!: (e?: Error) => void
  private failure?: Error
  private unwatch?: () => void
  private chain: Promise<void> = Promise.resolve()

  /** @internal */
  constructor(
    readonly pid: number,
    private readonly cmds: Commands,
    private readonly onStdout?: (data: string) => void | Promise<void>,
    private readonly onStderr?: (data: string) => void | Promise<void>
  ) {
    this.done = new Promise<void>((resolve) => {
      this.finish = (e?: Error) => {
        if (e && !this.failure) this.failure = e
        resolve()
      }
    })
  }

  /** @internal */
  attach(events: CommandEvents): void {
    this.unwatch = events.watch(
      this.pid,
      (ev) => this.onEvent(ev),
      (err) => this.finish(err)
    )
  }

  private onEvent(ev: CommandEvent): void {
    if (ev.name === 'stdout' || ev.name === 'stderr') {
      const text = ev.text ?? ''
      if (ev.name === 'stdout') this.out += text
      else this.errOut += text
      const cb = ev.name === 'stdout' ? this.onStdout : this.onStderr
      if (cb) this.chain = this.chain.then(() => cb(text)).catch(() => {})
    } else if (ev.state === 'exited') {
      this.timedOut = !!ev.timed_out
      this.chain.then(() => this.finish())
    }
  }

  /** stdout so far. */
  get stdout(): string {
    return this.result?.stdout ?? this.out
  }

  /** stderr so far. */
  get stderr(): string {
    return this.result?.stderr ?? this.errOut
  }

  /** The exit code once it ended. */
  get exitCode(): number | undefined {
    return this.result?.exitCode
  }

  /** The error message once it failed. */
  get error(): string | undefined {
    return this.result?.error
  }

  /**
   * Waits for the end. Resolves with the result when it exits 0; throws
   * CommandExitError otherwise, TimeoutError when it was killed at its
   * timeout or when the sandbox ended (killed, or at its end of life)
   * while it ran.
   */
  async wait(): Promise<CommandResult> {
    await this.done
    this.cmds._release(this)
    this.unwatch?.()
    if (!this.result) {
      // The gateway's record is the whole output even if events were missed.
      let info: any
      try {
        info = await this.cmds._get(this.pid)
      } catch (e) {
        if (e instanceof NotFoundError && !(await this.cmds._sandboxExists())) {
          throw new TimeoutError(`command ${this.pid} did not finish: the sandbox was killed or reached its end of life while it ran`)
        }
        throw this.failure ?? e
      }
      if (info.running) {
        throw this.failure ?? new SandboxError(`command ${this.pid} is still running`)
      }
      this.timedOut = this.timedOut || !!info.timed_out
      const exitCode = typeof info.exit_code === 'number' ? info.exit_code : -1
      this.result = {
        exitCode,
        stdout: typeof info.stdout === 'string' ? info.stdout : this.out,
        stderr: typeof info.stderr === 'string' ? info.stderr : this.errOut,
        ...(exitCode !== 0 ? { error: this.timedOut ? 'command timed out' : `exit status ${exitCode}` } : {}),
      }
    }
    if (this.timedOut) throw new TimeoutError(`command ${this.pid} ran past its timeout and was killed`)
    if (this.result.exitCode !== 0) throw new CommandExitError(this.result)
    return this.result
  }

  /** Kills the command's process group (SIGKILL). False if it had ended or does not exist. */
  async kill(): Promise<boolean> {
    return this.cmds.kill(this.pid)
  }

  /** Writes to the command's stdin (started with `stdin: true` or in the background). */
  async sendStdin(data: string | Uint8Array, opts?: CommandRequestOpts): Promise<void> {
    return this.cmds.sendStdin(this.pid, data, opts)
  }

  /** Closes the command's stdin. */
  async closeStdin(opts?: CommandRequestOpts): Promise<void> {
    return this.cmds.closeStdin(this.pid, opts)
  }

  /** Stops following the output; the command keeps running. */
  async disconnect(): Promise<void> {
    this.unwatch?.()
    this.cmds._release(this)
    this.finish(new SandboxError('disconnected from the command'))
  }
}

/**
 * Shell commands in the sandbox (`bash -lc CMD`, in the sandbox's user,
 * workspace, environment, network policy and limits).
 */
export class Commands {
  private readonly events: CommandEvents
  private readonly held = new Set<CommandHandle>()

  /** @internal */
  constructor(private readonly conn: ConnectionConfig, private readonly sandboxId: string) {
    this.events = new CommandEvents(conn, sandboxId)
  }

  /**
   * Runs a command. In the foreground (default) it resolves with its
   * result when it exits 0 and throws CommandExitError otherwise; with
   * `background: true` it resolves at once with a CommandHandle.
   */
  async run(cmd: string, opts: CommandStartOpts & { background: true }): Promise<CommandHandle>
  async run(cmd: string, opts?: CommandStartOpts & { background?: false | undefined }): Promise<CommandResult>
  async run(cmd: string, opts?: CommandStartOpts): Promise<CommandHandle | CommandResult>
  async run(cmd: string, opts: CommandStartOpts = {}): Promise<CommandHandle | CommandResult> {
    checkUser(opts.user)
    const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    const body: Record<string, unknown> = { cmd }
    if (opts.cwd) body.cwd = toWorkspacePath(opts.cwd)
    if (opts.envs && Object.keys(opts.envs).length > 0) body.envs = opts.envs
    if (timeoutMs > 0) body.timeout_s = timeoutMs / 1000
    const path = sessionPath(this.sandboxId, 'commands')
    if (!opts.background && !opts.onStdout && !opts.onStderr && !opts.stdin) {
      // One request: the gateway answers when the command ends.
      const out = await this.conn.request('POST', path, 'json', {
        json: body,
        ok: [200],
        timeoutMs: timeoutMs > 0 ? timeoutMs + (opts.requestTimeoutMs ?? this.conn.requestTimeoutMs) : 0,
        what: 'sandbox',
      })
      const exitCode = typeof out?.exit_code === 'number' ? out.exit_code : -1
      const result: CommandResult = {
        exitCode,
        stdout: String(out?.stdout ?? ''),
        stderr: String(out?.stderr ?? ''),
        ...(exitCode !== 0 ? { error: out?.timed_out ? 'command timed out' : `exit status ${exitCode}` } : {}),
      }
      if (out?.timed_out) throw new TimeoutError(`command ran past its timeout (${timeoutMs} ms) and was killed`)
      if (exitCode !== 0) throw new CommandExitError(result)
      return result
    }
    body.background = true
    const handle = await this._start(body, opts.onStdout, opts.onStderr, opts.requestTimeoutMs)
    if (!opts.stdin && !opts.background) {
      await this.closeStdin(handle.pid).catch(() => {})
    }
    if (opts.background) return handle
    return await handle.wait()
  }

  /** @internal: starts a background command (body) and follows its events. */
  async _start(
    body: Record<string, unknown>,
    onStdout?: (data: string) => void | Promise<void>,
    onStderr?: (data: string) => void | Promise<void>,
    requestTimeoutMs?: number
  ): Promise<CommandHandle> {
    await this.events.acquire()
    let handle: CommandHandle
    try {
      const started = await this.conn.request('POST', sessionPath(this.sandboxId, 'commands'), 'json', { json: body, ok: [201], timeoutMs: requestTimeoutMs, what: 'sandbox' })
      handle = new CommandHandle(Number(started.pid), this, onStdout, onStderr)
    } catch (e) {
      this.events.release()
      throw e
    }
    this.held.add(handle)
    handle.attach(this.events)
    return handle
  }

  /** Follows a running command's output again (a CommandHandle), by pid. */
  async connect(pid: number, opts: CommandConnectOpts = {}): Promise<CommandHandle> {
    await this.events.acquire()
    const handle = new CommandHandle(pid, this, opts.onStdout, opts.onStderr)
    this.held.add(handle)
    handle.attach(this.events)
    try {
      const info = await this._get(pid, opts.requestTimeoutMs)
      if (!info.running) {
        // It ended before we watched: wait() reads its record.
        ;(handle as any).finish()
      }
    } catch (e) {
      await handle.disconnect()
      throw e
    }
    return handle
  }

  /** The running commands (E2B lists running processes only). */
  async list(opts?: CommandRequestOpts & { includeFinished?: boolean }): Promise<ProcessInfo[]> {
    const out = await this.conn.request('GET', sessionPath(this.sandboxId, 'commands'), 'json', { timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' })
    const list: any[] = Array.isArray(out?.commands) ? out.commands : []
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
      }))
  }

  /** Kills a command's process group. False if it does not exist or had ended. */
  async kill(pid: number, opts?: CommandRequestOpts): Promise<boolean> {
    let info: any
    try {
      info = await this._get(pid, opts?.requestTimeoutMs)
    } catch (e) {
      if (e instanceof NotFoundError) return false
      throw e
    }
    if (!info.running) return false
    try {
      await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'kill'), 'none', { ok: [204], timeoutMs: opts?.requestTimeoutMs })
      return true
    } catch (e) {
      if (e instanceof NotFoundError) return false
      throw e
    }
  }

  /** Writes `data` (a string, or UTF-8 bytes) to a command's stdin. */
  async sendStdin(pid: number, data: string | Uint8Array, opts?: CommandRequestOpts): Promise<void> {
    if (data instanceof Uint8Array) {
      try {
        data = new TextDecoder('utf-8', { fatal: true }).decode(data)
      } catch {
        throw new InvalidArgumentError('stdin bytes must be UTF-8')
      }
    }
    if (typeof data !== 'string') throw new InvalidArgumentError('stdin data must be a string or a Uint8Array')
    await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'stdin'), 'none', { json: { data }, ok: [204], timeoutMs: opts?.requestTimeoutMs })
  }

  /** Closes a command's stdin (it reads EOF). */
  async closeStdin(pid: number, opts?: CommandRequestOpts): Promise<void> {
    await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'stdin'), 'none', { json: { eof: true }, ok: [204], timeoutMs: opts?.requestTimeoutMs })
  }

  /** @internal */
  async _get(pid: number, timeoutMs?: number): Promise<any> {
    return this.conn.request('GET', sessionPath(this.sandboxId, 'commands', String(pid)), 'json', { timeoutMs })
  }

  /** @internal: whether the sandbox is still there (a 404 says it is not). */
  async _sandboxExists(): Promise<boolean> {
    try {
      await this.conn.request('GET', sessionPath(this.sandboxId), 'json', {})
      return true
    } catch (e) {
      if (e instanceof NotFoundError) return false
      throw e
    }
  }

  /** @internal */
  _release(h: CommandHandle): void {
    if (this.held.delete(h)) this.events.release()
  }

  /** @internal: stops following every command (the sandbox was killed). */
  _close(): void {
    for (const h of [...this.held]) void h.disconnect()
  }
}

/** Options of `pty.create` (E2B's). */
export interface PtyCreateOpts extends CommandRequestOpts {
  cols: number
  rows: number
  /** Called with each chunk of the terminal's output, as bytes. */
  onData?: (data: Uint8Array) => void | Promise<void>
  cwd?: string
  /** E2B's: only 'user', the sandbox's one (unprivileged) user. */
  user?: string
  envs?: Record<string, string>
  /** How long the terminal may live (ms; default 60 000, E2B's); 0: no limit. */
  timeoutMs?: number
}

/** Options of `pty.connect` (E2B's). */
export interface PtyConnectOpts extends CommandRequestOpts {
  onData?: (data: Uint8Array) => void | Promise<void>
  timeoutMs?: number
}

function bytesOf(onData?: (data: Uint8Array) => void | Promise<void>): ((text: string) => void | Promise<void>) | undefined {
  if (!onData) return undefined
  const enc = new TextEncoder()
  return (text: string) => onData(enc.encode(text))
}

/**
 * Pseudo-terminals in the sandbox (`sbx.pty`, E2B's): each an interactive
 * bash on a PTY, a command of the sandbox with its own pid, that lives
 * until it exits, is killed, reaches its timeout or the sandbox ends,
 * whoever is connected to it.
 */
export class Pty {
  /** @internal */
  constructor(private readonly conn: ConnectionConfig, private readonly sandboxId: string, private readonly cmds: Commands) {}

  /** Starts `bash -l` on a PTY of cols × rows; its handle's `onData` gets the output as bytes. */
  async create(opts: PtyCreateOpts): Promise<CommandHandle> {
    checkUser(opts.user)
    const timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
    const body: Record<string, unknown> = {
      cmd: '',
      login: true,
      envs: { LANG: 'C.UTF-8', ...(opts.envs ?? {}) },
      pty: { cols: opts.cols, rows: opts.rows },
      background: true,
    }
    if (opts.cwd) body.cwd = toWorkspacePath(opts.cwd)
    if (timeoutMs > 0) body.timeout_s = timeoutMs / 1000
    return this.cmds._start(body, bytesOf(opts.onData), undefined, opts.requestTimeoutMs)
  }

  /** Follows a running PTY's output again, by pid. */
  async connect(pid: number, opts: PtyConnectOpts = {}): Promise<CommandHandle> {
    return this.cmds.connect(pid, { onStdout: bytesOf(opts.onData), requestTimeoutMs: opts.requestTimeoutMs })
  }

  /** Types `data` into the PTY (`\x03` is Ctrl-C). */
  async sendInput(pid: number, data: Uint8Array | string, opts?: CommandRequestOpts): Promise<void> {
    const text = typeof data === 'string' ? data : new TextDecoder().decode(data)
    await this.cmds.sendStdin(pid, text, opts)
  }

  /** Changes the PTY's size. */
  async resize(pid: number, size: { cols: number; rows: number }, opts?: CommandRequestOpts): Promise<void> {
    await this.conn.request('POST', sessionPath(this.sandboxId, 'commands', String(pid), 'resize'), 'none', {
      json: { cols: size.cols, rows: size.rows },
      ok: [204],
      timeoutMs: opts?.requestTimeoutMs,
    })
  }

  /** Kills the PTY and everything it started; false if it was not running. */
  async kill(pid: number, opts?: CommandRequestOpts): Promise<boolean> {
    return this.cmds.kill(pid, opts)
  }
}
