import { ConnectionConfig, type ConnectionOpts, frameText, openWebSocket, sessionPath } from './connection.js'
import { Commands, Pty } from './commands.js'
import { checkUser, errorFromStatus, InvalidArgumentError, NotFoundError, RateLimitError, SandboxError, TimeoutError } from './errors.js'
import { HOME } from './paths.js'
import {
  type CreateSnapshotOpts,
  deleteSnapshot,
  getSnapshot,
  type RestoreReport,
  restoreReport,
  SNAPSHOT_ID,
  type SnapshotInfo,
  snapshotInfo,
  type SnapshotListOpts,
  SnapshotPaginator,
} from './snapshot.js'

/** A TCP port a process of the sandbox listens on (`sbx.ports()`). */
export interface Port {
  port: number
  /** Where it listens: 0.0.0.0, 127.0.0.1, ::, ::1. */
  address: string
}

/** A preview of a server in the sandbox (`sbx.preview(port)`), on the gateway's preview origin. */
export interface Preview {
  port: number
  /** Carries its own grant (E2B's getHost): works until the sandbox ends. */
  host: string
  /** An expiring link for a browser; its token becomes a cookie of its host. */
  url: string
  /** For the Glassroom-Preview-Token header of other programs. */
  token: string
  expiresAt: Date
}
import { Filesystem } from './filesystem.js'
import { Execution, ExecutionError, OutputMessage, pageResult, Result, UserExpression } from './messaging.js'

/** A context: one kernel of the sandbox with its own language, working directory and variables. */
export interface Context {
  id: string
  language: string
  cwd: string
  /** glassroom: the kernel's state. */
  state?: string
  /** glassroom: whether it is its language's default context. */
  default?: boolean
}

export type RunCodeLanguage = 'python' | 'javascript' | 'typescript' | 'r' | 'java' | 'bash' | (string & {})

export interface RunCodeOpts {
  onStdout?: (output: OutputMessage) => Promise<any> | any
  onStderr?: (output: OutputMessage) => Promise<any> | any
  onResult?: (data: Result) => Promise<any> | any
  onError?: (error: ExecutionError) => Promise<any> | any
  /** Environment variables for this execution only. */
  envs?: Record<string, string>
  /** glassroom: working directory for this execution only (a workspace path that exists). */
  cwd?: string
  /**
   * glassroom: expressions the kernel evaluates after the code, by name
   * (Jupyter's `user_expressions`; at most 32, a name of 1..256 bytes, an
   * expression of at most 4 KiB, else InvalidArgumentError); their answers
   * are in `execution.userExpressions`. The Python kernel evaluates none
   * after code that raised.
   */
  userExpressions?: Record<string, string>
  /** How long the code may run (ms); past it it is interrupted and runCode throws TimeoutError. Default: the gateway's execution timeout. */
  timeoutMs?: number
  /** How long to wait for the gateway beyond that (ms). */
  requestTimeoutMs?: number
  /** Cancels the wait (the code is interrupted). */
  signal?: AbortSignal
}

export interface CreateCodeContextOpts {
  cwd?: string
  language?: RunCodeLanguage
  requestTimeoutMs?: number
}

/** Options of `Sandbox.create`. */
export interface SandboxOpts extends ConnectionOpts {
  /**
   * A template (an operator-defined preset; built in: `default`,
   * `code-interpreter-v1`). A snapshot's id here (`snap-…`, as E2B's
   * `Sandbox.create(snapshotId)`) is taken as `snapshot`.
   */
  template?: string
  /**
   * glassroom: a snapshot of this API key's (`sbx.createSnapshot()`) to
   * start from: its workspace and its contexts' variables are restored
   * before `create` returns; `sbx.restore` says what came back. The
   * language defaults to the snapshot's.
   */
  snapshot?: string
  /** Stored with the sandbox; `Sandbox.list({query: {metadata}})` filters on it. */
  metadata?: Record<string, string>
  /** Environment variables of the sandbox's kernels and commands. */
  envs?: Record<string, string>
  /** The sandbox's lifetime (ms): it is killed this long after creation (`setTimeout` moves it). Default: the gateway's maximum lifetime. */
  timeoutMs?: number
  /** false: the sandbox's `accessToken` is not kept (E2B's `secure`; the API key works either way). */
  secure?: boolean
  /** E2B: false means no network, which is glassroom's default; true needs `network.allow` on glassroom. */
  allowInternetAccess?: boolean
  /**
   * glassroom: `{allow: [...], deny: [...]}`, within the operator's
   * allowlist. E2B's `allowOut` is taken as `allow`, its `denyOut` as
   * `deny` (`['0.0.0.0/0']`: only what allowOut lists; on glassroom a deny
   * wins over an allow). `allowPublicTraffic: false` makes the
   * sandbox's previews private (as `privatePreviews`). Its other settings
   * (rules, proxies, `maskRequestHost`) have no glassroom counterpart and
   * are ignored.
   */
  network?: { allow?: string[]; allowOut?: unknown; deny?: string[]; denyOut?: unknown } & Record<string, unknown>
  /**
   * glassroom: the sandbox's previews are private: `getHost(port)` is no
   * grant by itself, and a request needs `trafficAccessToken` in the
   * `e2b-traffic-access-token` header (E2B's `network.allowPublicTraffic: false`).
   */
  privatePreviews?: boolean
  /** glassroom: memory_mb, cpus, pids, workspace_mb. */
  limits?: { memory_mb?: number; cpus?: number; pids?: number; workspace_mb?: number }
  /** glassroom: the first context's language (default python). */
  language?: string
  /** glassroom: this key's volumes to mount (`Volume.create`): name → a directory under /home/user. */
  volumes?: Record<string, string>
  /** E2B: `{ path: Volume or name }`, the same mounts the other way round. */
  volumeMounts?: Record<string, { name: string } | string>
  /** glassroom: seconds without activity before the gateway deletes the sandbox. */
  idleTimeoutS?: number
  /**
   * E2B's: what the sandbox does at its timeout. `onTimeout: 'kill'` (the
   * default) ends it; `'pause'` (or `{action: 'pause'}`) freezes it with
   * its memory until `connect`, or with `autoResume` its next use.
   * `{action: 'pause', keepMemory: false}` hibernates it instead: its
   * workspace and variables go to a snapshot and its sandbox is freed,
   * until `connect` wakes it (E2B's rule: not with `autoResume`).
   */
  lifecycle?: Lifecycle
}

/** E2B's sandbox lifecycle (SandboxOpts.lifecycle). */
export interface Lifecycle {
  onTimeout?: 'kill' | 'pause' | { action: 'kill' | 'pause'; keepMemory?: boolean | null }
  autoResume?: boolean
}

/** The gateway's form of E2B's lifecycle, or undefined when the sandbox ends at its timeout. */
function wireLifecycle(l: Lifecycle | undefined): { on_timeout: 'pause'; auto_resume: boolean; keep_memory?: false } | undefined {
  if (!l) return undefined
  let action: unknown = l.onTimeout ?? 'kill'
  let keepMemory: boolean | null | undefined
  if (typeof action === 'object' && action !== null) {
    keepMemory = (action as { keepMemory?: boolean | null }).keepMemory
    action = (action as { action?: unknown }).action ?? 'kill'
  }
  const autoResume = !!l.autoResume
  if (action !== 'kill' && action !== 'pause') throw new InvalidArgumentError(`lifecycle onTimeout ${JSON.stringify(action)}: kill or pause`)
  if (action === 'kill') {
    if (keepMemory !== undefined) throw new InvalidArgumentError('keepMemory is not allowed when onTimeout action is kill')
    if (autoResume) throw new InvalidArgumentError('autoResume needs onTimeout pause')
    return undefined
  }
  if (keepMemory === false) {
    // E2B's rule (glassroom's gateway could wake it on use, but E2B code expects this refusal).
    if (autoResume) throw new InvalidArgumentError('autoResume: true is not a valid value when keepMemory: false - a filesystem-only snapshot cannot be auto-resumed by traffic and must be resumed explicitly using Sandbox.connect().')
    return { on_timeout: 'pause', auto_resume: false, keep_memory: false }
  }
  return { on_timeout: 'pause', auto_resume: autoResume }
}

export type SandboxConnectOpts = ConnectionOpts & { timeoutMs?: number }

/** Options of `pause` (E2B's SandboxPauseOpts). */
export interface SandboxPauseOpts {
  /**
   * false hibernates the sandbox (E2B's filesystem-only pause): its
   * workspace and its contexts' variables go to a snapshot and its
   * sandbox is freed; it keeps its id, and uses are refused until
   * `connect` (or `resume`) wakes it, or, with its lifecycle's
   * `autoResume`, its next use. Default true: frozen with its memory.
   */
  keepMemory?: boolean
  requestTimeoutMs?: number
}

/** Options of `fork`. */
export interface SandboxForkOpts {
  /** How many sandboxes to start (1..8 by default; default 1). */
  count?: number
  /** Each fork's lifetime (ms); default the Sandbox class's `defaultTimeoutMs` (E2B's 300 s in `glassroom/e2b`), else the gateway's. */
  timeoutMs?: number
  requestTimeoutMs?: number
}

export type SandboxState = 'running' | 'paused'

/** A sandbox as `getInfo` and `list` give it. */
export interface SandboxInfo {
  sandboxId: string
  templateId: string
  name?: string
  metadata: Record<string, string>
  startedAt: Date
  endAt: Date
  state: SandboxState
  cpuCount: number
  memoryMB: number
  envdVersion: string
  /** glassroom: the kernel's state (idle, busy, restarting, dead). */
  kernelState?: string
  /** glassroom: the runtime (local, docker, k8s). */
  runtime?: string
  /** glassroom: hibernated (`pause({ keepMemory: false })`): its sandbox freed, its state in a snapshot until `connect` wakes it. state is 'paused'. */
  hibernated?: boolean
  /** glassroom: the session as the gateway answered it. */
  raw: Record<string, any>
}

export interface SandboxMetrics {
  timestamp: Date
  cpuUsedPct: number
  cpuCount: number
  memUsed: number
  memTotal: number
  memCache: number
  diskUsed: number
  diskTotal: number
}

export interface SandboxListOpts extends ConnectionOpts {
  query?: { metadata?: Record<string, string>; state?: SandboxState[]; template?: string; startedAfter?: Date; startedBefore?: Date }
  limit?: number
  nextToken?: string
  /** 'desc' (the default, as E2B's: the newest first) or 'asc'. */
  order?: 'asc' | 'desc'
}

/** The session JSON as a SandboxInfo. */
export function sandboxInfo(s: any): SandboxInfo {
  const limits = s?.limits ?? {}
  return {
    sandboxId: String(s?.id ?? ''),
    templateId: String(s?.template ?? 'default'),
    metadata: s?.metadata && typeof s.metadata === 'object' ? { ...s.metadata } : {},
    startedAt: new Date(s?.created_at ?? 0),
    endAt: new Date(s?.end_at ?? s?.expires_at ?? 0),
    // A client's pause only: the idle freeze is transparent (the next request thaws it).
    state: (s?.paused_by_client ?? s?.paused) ? 'paused' : 'running',
    cpuCount: Number(limits.cpus ?? 0),
    memoryMB: Number(limits.memory_mb ?? 0),
    envdVersion: '',
    kernelState: s?.state,
    runtime: s?.runtime,
    hibernated: !!s?.hibernated,
    raw: s ?? {},
  }
}

/** Pages of `Sandbox.list`: `while (p.hasNext) items.push(...await p.nextItems())`. */
export class SandboxPaginator {
  private _hasNext = true
  private _nextToken?: string
  private readonly conn: ConnectionConfig
  constructor(private readonly opts: SandboxListOpts = {}) {
    if (opts.order !== undefined && opts.order !== 'asc' && opts.order !== 'desc') {
      throw new InvalidArgumentError(`invalid order ${JSON.stringify(opts.order)}: 'asc' or 'desc'`)
    }
    this.conn = new ConnectionConfig(opts)
    this._nextToken = opts.nextToken
  }
  get hasNext(): boolean {
    return this._hasNext
  }
  get nextToken(): string | undefined {
    return this._nextToken
  }
  async nextItems(): Promise<SandboxInfo[]> {
    if (!this._hasNext) throw new SandboxError('no more items to fetch')
    const query: Record<string, string | string[] | undefined> = {}
    for (const [k, v] of Object.entries(this.opts.query?.metadata ?? {})) query['metadata.' + k] = v
    if (this.opts.query?.state?.length) query.state = this.opts.query.state
    if (this.opts.query?.template) query.template = this.opts.query.template
    if (this.opts.query?.startedAfter) query.started_after = new Date(this.opts.query.startedAfter).toISOString()
    if (this.opts.query?.startedBefore) query.started_before = new Date(this.opts.query.startedBefore).toISOString()
    query.order = this.opts.order ?? 'desc'
    if (this.opts.limit) query.limit = String(this.opts.limit)
    if (this._nextToken) query.next_token = this._nextToken
    const out = await this.conn.request('GET', '/v1/sessions', 'json', { query })
    this._nextToken = typeof out?.next_token === 'string' && out.next_token ? out.next_token : undefined
    this._hasNext = !!this._nextToken
    return (Array.isArray(out?.sessions) ? out.sessions : []).map(sandboxInfo)
  }
}

const ALL_TRAFFIC = '0.0.0.0/0'

/** Why `mcp` is refused: E2B's words first, which its users match. */
const MCP_REFUSED = 'Failed to start MCP gateway: a glassroom sandbox runs no MCP gateway inside (glassroom serves MCP itself: docs/mcp.md)'

/** E2B's metrics collection interval: getMetrics' range is widened by it. */
const METRICS_INTERVAL_MS = 5_000

/**
 * glassroom's rules for E2B's `{ allowOut, denyOut }`: allowOut is the
 * allowlist; denyOut ['0.0.0.0/0'] means "only allowOut"; other denyOut
 * entries are the deny list (on glassroom a deny wins over an allow), over
 * every name when allowOut is empty. undefined: no rules given.
 */
function networkRules(n: { allowOut?: unknown; denyOut?: unknown; allow?: unknown; deny?: unknown }): { allow: string[]; deny?: string[] } | undefined {
  // E2B's selectors may be functions of a context ({ allTraffic, rules }).
  const selected = (v: unknown) => (typeof v === 'function' ? v({ allTraffic: ALL_TRAFFIC, rules: {} }) : v)
  const strings = (v: unknown) => {
    const list = selected(v)
    return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : undefined
  }
  const allow = strings(n.allow ?? n.allowOut)
  const denied = strings(n.deny ?? n.denyOut) ?? []
  if (allow?.includes(ALL_TRAFFIC)) throw new InvalidArgumentError('glassroom networks are allowlists of host names and blocks: allowOut cannot be all traffic')
  const onlyAllowed = denied.includes(ALL_TRAFFIC)
  const deny = denied.filter((d) => d !== ALL_TRAFFIC)
  let out: { allow: string[]; deny?: string[] }
  if (allow?.length) out = { allow }
  else if (onlyAllowed || (allow && !deny.length)) return { allow: [] }
  else if (deny.length) out = { allow: ['*'] }
  else return undefined
  if (deny.length) out.deny = deny
  return out
}

/** A context as the gateway answers it, with E2B's language name for Python (`python`, not the kernel's `python3`). */
function toContext(c: any): Context {
  return { ...c, language: c?.language === 'python3' ? 'python' : c?.language }
}

const KILLED = 'The sandbox was killed while the request was in progress'

/** The error one fork met (`{code, message}`, no status), as the SDK's error type of its code. */
function forkError(e: any): Error {
  const code = String(e?.code ?? '')
  const msg = String(e?.message ?? 'the fork failed')
  if (/^too_many_|^rate_limited$|^queue_full$/.test(code)) return new RateLimitError(msg, { code })
  if (code === 'bad_request') return new InvalidArgumentError(msg, { code })
  if (code === 'kernel_timeout') return new TimeoutError(msg, { code })
  if (code.endsWith('not_found')) return new NotFoundError(msg, { code }) // what it needed, not the sandbox forked
  return new SandboxError(`${code || 'fork'}: ${msg}`, { code })
}

/**
 * The languages whose default context E2B's sandboxes list from the start
 * (besides Python's, the first context). glassroom starts a language's
 * default context on its first use: until then listCodeContexts shows it
 * with the language as its id, which runCode, restartCodeContext and
 * removeCodeContext take for that default context.
 */
const PENDING_DEFAULTS = ['javascript']

function contextId(c: Context | string): string {
  const id = typeof c === 'string' ? c : c?.id
  if (!id || typeof id !== 'string') throw new InvalidArgumentError('context must be a Context or a context id')
  return id
}

function applyEvent(x: Execution, ev: any): Result | ExecutionError | undefined {
  switch (ev?.type) {
    case 'stream':
      ;(ev.name === 'stderr' ? x.logs.stderr : x.logs.stdout).push(String(ev.text ?? ''))
      return undefined
    case 'display':
    case 'result': {
      const r = new Result(ev.data ?? {}, ev.type === 'result')
      x.results.push(r)
      if (ev.type === 'result' && typeof ev.execution_count === 'number') x.executionCount = ev.execution_count
      return r
    }
    case 'error': {
      const tb = Array.isArray(ev.traceback) ? ev.traceback.map(String).join('\n') : String(ev.traceback ?? '')
      x.error = new ExecutionError(String(ev.name ?? ''), String(ev.value ?? ''), tb)
      return x.error
    }
    case 'page':
      if (ev.data && typeof ev.data === 'object' && !Array.isArray(ev.data)) x.pages.push(pageResult(ev.data))
      return undefined
    case 'set_next_input':
      x.nextInput = { text: String(ev.text ?? ''), replace: !!ev.replace }
      return undefined
    case 'ask_exit':
      x.exitRequested = true
      return undefined
  }
  return undefined
}

function finish(x: Execution, out: any): void {
  x.status = String(out?.status ?? 'ok')
  if (typeof out?.execution_count === 'number') x.executionCount = out.execution_count
  x.durationMs = Number(out?.duration_ms ?? 0)
  x.truncated = !!out?.truncated
  x.stateLost = !!out?.state_lost
  if (out?.reason) x.reason = String(out.reason)
  for (const f of Array.isArray(out?.files) ? out.files : []) x.files.push({ path: String(f.path), size: Number(f.size ?? 0), change: String(f.change ?? '') })
  const ues = out?.user_expressions
  if (ues && typeof ues === 'object' && !Array.isArray(ues)) {
    // fromEntries: a name such as __proto__ is an own property like any other.
    x.userExpressions = Object.fromEntries(Object.entries(ues)
      .filter(([, v]) => v && typeof v === 'object' && !Array.isArray(v))
      .map(([name, v]) => [name, UserExpression.fromJSON(v)]))
  }
}

/**
 * A glassroom session (a sandbox holding persistent Jupyter kernels),
 * shaped like E2B's code-interpreter Sandbox. `Sandbox.create()` starts
 * one, `Sandbox.connect(id)` attaches to one; `kill()` ends it. Methods
 * may be called concurrently.
 */
export class Sandbox {
  /** E2B's default template name; glassroom's gateway has it built in. */
  protected static readonly defaultTemplate: string = 'code-interpreter-v1'

  readonly sandboxId: string
  /** The workspace's files (/home/user). */
  readonly files: Filesystem
  /** Shell commands in the sandbox. */
  readonly commands: Commands
  /** Pseudo-terminals in the sandbox (E2B's `sbx.pty`). */
  readonly pty: Pty
  /** @internal */
  readonly connectionConfig: ConnectionConfig
  /** @internal: the session's preview_host, known once created or connected. */
  protected previewHost?: string
  /**
   * The sandbox's access token, known once created or connected (E2B's
   * envd access token; none after `secure: false`): sent as the
   * `X-Access-Token` header instead of the API key, it grants what runs
   * inside this sandbox (code, files, commands), nothing else, until it ends.
   */
  accessToken?: string
  /**
   * The token of a sandbox with private previews (`privatePreviews`, E2B's
   * `network.allowPublicTraffic: false`), known once created or
   * connected: in the `e2b-traffic-access-token` header, it opens
   * `getHost(port)` of any port until the sandbox ends.
   */
  trafficAccessToken?: string
  /**
   * glassroom: what a sandbox started from a snapshot (`Sandbox.create(snapshotId)`)
   * or by `fork` got of it, per context: the variables restored and those
   * that were not, with why. Undefined for any other sandbox.
   */
  readonly restore?: RestoreReport

  /** @internal: use Sandbox.create or Sandbox.connect. */
  constructor(opts: { sandboxId: string; previewHost?: string; accessToken?: string; trafficAccessToken?: string; restore?: RestoreReport } & ConnectionOpts) {
    this.connectionConfig = new ConnectionConfig(opts)
    this.sandboxId = opts.sandboxId
    this.previewHost = opts.previewHost
    this.accessToken = opts.accessToken
    this.trafficAccessToken = opts.trafficAccessToken
    this.restore = opts.restore
    this.files = new Filesystem(this.connectionConfig, this.sandboxId)
    this.commands = new Commands(this.connectionConfig, this.sandboxId)
    this.pty = new Pty(this.connectionConfig, this.sandboxId, this.commands)
  }

  /**
   * The lifetime `create` asks for when `timeoutMs` is not given:
   * undefined here (the gateway's maximum), 300 s in `glassroom/e2b`'s
   * Sandbox (E2B's default).
   */
  static readonly defaultTimeoutMs: number | undefined = undefined

  /** @internal: a Sandbox of `s`, a session as the gateway answered its creation. */
  protected static fromSession<S extends typeof Sandbox>(this: S, conn: ConnectionConfig, s: any, secure = true): InstanceType<S> {
    return new this({ ...conn.toOpts(), sandboxId: String(s.id), previewHost: s.preview_host || undefined, accessToken: (secure && s.access_token) || undefined,
      trafficAccessToken: s.traffic_access_token || undefined, restore: restoreReport(s.restore) }) as InstanceType<S>
  }

  /**
   * Starts a sandbox. `template` (optional) names a preset of the
   * gateway's operator; without it the gateway's defaults apply. A
   * snapshot's id in its place (E2B's `Sandbox.create(snapshotId)`)
   * starts the sandbox from that snapshot (`opts.snapshot`).
   */
  static async create<S extends typeof Sandbox>(this: S, opts?: SandboxOpts): Promise<InstanceType<S>>
  static async create<S extends typeof Sandbox>(this: S, template: string, opts?: SandboxOpts): Promise<InstanceType<S>>
  static async create<S extends typeof Sandbox>(this: S, templateOrOpts?: string | SandboxOpts, maybeOpts?: SandboxOpts): Promise<InstanceType<S>> {
    const opts: SandboxOpts = typeof templateOrOpts === 'string' ? { ...(maybeOpts ?? {}), template: templateOrOpts } : { ...(templateOrOpts ?? {}) }
    const e2bOnly = opts as { mcp?: unknown }
    if (e2bOnly.mcp !== undefined && e2bOnly.mcp !== null) {
      throw new InvalidArgumentError(MCP_REFUSED)
    }
    const lifecycle = wireLifecycle(opts.lifecycle)
    const conn = new ConnectionConfig(opts)
    const body: Record<string, unknown> = {}
    let snapshot = opts.snapshot
    if (opts.template && SNAPSHOT_ID.test(opts.template)) {
      if (snapshot && snapshot !== opts.template) throw new InvalidArgumentError(`two snapshots: template ${opts.template} and snapshot ${snapshot}`)
      snapshot = opts.template
    } else if (opts.template) {
      body.template = opts.template
    }
    if (snapshot) body.snapshot = snapshot
    if (opts.metadata && Object.keys(opts.metadata).length) body.metadata = opts.metadata
    if (opts.envs && Object.keys(opts.envs).length) body.env = opts.envs
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs
    if (timeoutMs !== undefined) {
      if (!(timeoutMs > 0)) throw new InvalidArgumentError('timeoutMs must be positive')
      body.lifetime_s = Math.ceil(timeoutMs / 1000)
    }
    const rules = opts.network ? networkRules(opts.network as any) : undefined
    if (rules?.allow.length) body.network = rules
    if (opts.limits) body.limits = opts.limits
    if (opts.language) body.language = opts.language
    const volumes: Record<string, string> = { ...(opts.volumes ?? {}) }
    for (const [path, v] of Object.entries(opts.volumeMounts ?? {})) volumes[typeof v === 'string' ? v : v.name] = path
    if (Object.keys(volumes).length) body.volumes = volumes
    if (opts.idleTimeoutS) body.idle_timeout_s = opts.idleTimeoutS
    if (opts.privatePreviews || (opts.network as { allowPublicTraffic?: boolean } | undefined)?.allowPublicTraffic === false) body.private_previews = true
    if (lifecycle) body.lifecycle = lifecycle
    // A restore happens before the answer: it may take longer than a plain start.
    const requestTimeoutMs = snapshot && conn.requestTimeoutMs > 0 ? Math.max(conn.requestTimeoutMs, 120_000) : undefined
    const out = await conn.request('POST', '/v1/sessions', 'json', { json: body, ok: [201], timeoutMs: requestTimeoutMs })
    return this.fromSession(conn, out, opts.secure !== false)
  }

  /** Attaches to an existing sandbox (SandboxNotFoundError if it is gone); a paused one is resumed. */
  static async connect<S extends typeof Sandbox>(this: S, sandboxId: string, opts?: SandboxConnectOpts): Promise<InstanceType<S>> {
    const conn = new ConnectionConfig(opts)
    const sbx = new this({ ...conn.toOpts(), sandboxId }) as InstanceType<S>
    await sbx.connect(opts)
    return sbx
  }

  /**
   * Checks the sandbox is there (resuming it if a client paused it, waking
   * it if it is hibernated); with
   * `timeoutMs`, its end moves to `timeoutMs` from now if that is later
   * (as E2B's: a connect never shortens a sandbox's life).
   */
  async connect(opts?: { timeoutMs?: number }): Promise<this> {
    const s = await this.connectionConfig.request('GET', sessionPath(this.sandboxId), 'json', { what: 'sandbox' })
    if (s?.preview_host) this.previewHost = String(s.preview_host)
    if (s?.access_token) this.accessToken = String(s.access_token)
    if (s?.traffic_access_token) this.trafficAccessToken = String(s.traffic_access_token)
    if (s?.hibernated) await this.resume() // its wake restores it: a failure is the caller's
    else if (s?.paused) await this.resume().catch(() => {})
    const end = new Date(s?.end_at ?? s?.expires_at ?? NaN).getTime()
    if (opts?.timeoutMs && !(end >= Date.now() + opts.timeoutMs)) await this.setTimeout(opts.timeoutMs)
    return this
  }

  /** The sandboxes of this API key, page by page. */
  static list(opts?: SandboxListOpts): SandboxPaginator {
    return new SandboxPaginator(opts)
  }

  /** Kills a sandbox by id; false if it did not exist. */
  static async kill(sandboxId: string, opts?: ConnectionOpts): Promise<boolean> {
    return new Sandbox({ ...(opts ?? {}), sandboxId }).kill()
  }

  static async setTimeout(sandboxId: string, timeoutMs: number, opts?: ConnectionOpts): Promise<void> {
    return new Sandbox({ ...(opts ?? {}), sandboxId }).setTimeout(timeoutMs)
  }

  static async getInfo(sandboxId: string, opts?: ConnectionOpts): Promise<SandboxInfo> {
    return new Sandbox({ ...(opts ?? {}), sandboxId }).getInfo()
  }

  static async getMetrics(sandboxId: string, opts?: ConnectionOpts & { start?: Date | string | number; end?: Date | string | number }): Promise<SandboxMetrics[]> {
    return new Sandbox({ ...(opts ?? {}), sandboxId }).getMetrics(opts)
  }

  /** Pauses a sandbox by id; `keepMemory: false` hibernates it (see `pause`). */
  static async pause(sandboxId: string, opts?: ConnectionOpts & SandboxPauseOpts): Promise<boolean> {
    return new Sandbox({ ...(opts ?? {}), sandboxId }).pause(opts)
  }

  /** E2B's name for `pause` while it was in beta. */
  static async betaPause(sandboxId: string, opts?: ConnectionOpts & SandboxPauseOpts): Promise<boolean> {
    return Sandbox.pause(sandboxId, opts)
  }

  /** Snapshots a sandbox by id (see `createSnapshot`). */
  static async createSnapshot(sandboxId: string, opts?: CreateSnapshotOpts & { requestTimeoutMs?: number }): Promise<SnapshotInfo> {
    return new Sandbox({ ...(opts ?? {}), sandboxId }).createSnapshot(opts)
  }

  /** This API key's snapshots, newest first, page by page (E2B's); `sandboxId` keeps one sandbox's. */
  static listSnapshots(opts?: SnapshotListOpts): SnapshotPaginator {
    return new SnapshotPaginator(opts)
  }

  /** glassroom: one snapshot of this API key (a NotFoundError when it has none of that id). */
  static async getSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<SnapshotInfo> {
    return getSnapshot(snapshotId, opts)
  }

  /** Deletes a snapshot; false if this API key had none of that id (E2B's). */
  static async deleteSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<boolean> {
    return deleteSnapshot(snapshotId, opts)
  }

  /** Forks a sandbox by id (see `fork`): the forks are of this class. */
  static async fork<S extends typeof Sandbox>(this: S, sandboxId: string, opts?: ConnectionOpts & SandboxForkOpts): Promise<Array<InstanceType<S> | Error>> {
    return new this({ ...(opts ?? {}), sandboxId }).fork(opts) as Promise<Array<InstanceType<S> | Error>>
  }

  /** Deletes the sandbox (kernels, commands, files); false if it did not exist. */
  async kill(opts?: { requestTimeoutMs?: number }): Promise<boolean> {
    this.commands._close()
    try {
      await this.connectionConfig.request('DELETE', sessionPath(this.sandboxId), 'none', { ok: [204], timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' })
      return true
    } catch (e) {
      if (e instanceof NotFoundError) return false
      throw e
    }
  }

  /** `await using sbx = await Sandbox.create()` kills it at the end of the block. */
  async [(Symbol as any).asyncDispose ?? Symbol.for('Symbol.asyncDispose')](): Promise<void> {
    await this.kill()
  }

  /**
   * Sets the sandbox's lifetime: it ends `timeoutMs` from now (capped by
   * the gateway's maximum lifetime); 0 is now: it ends, or pauses when its
   * `lifecycle` says so.
   */
  async setTimeout(timeoutMs: number, opts?: { requestTimeoutMs?: number }): Promise<void> {
    if (!(timeoutMs >= 0)) throw new InvalidArgumentError('timeoutMs must not be negative')
    await this.connectionConfig.request('PATCH', sessionPath(this.sandboxId), 'json', { json: { lifetime_s: Math.ceil(timeoutMs / 1000) }, timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' })
  }

  async getInfo(opts?: { requestTimeoutMs?: number }): Promise<SandboxInfo> {
    return sandboxInfo(await this.connectionConfig.request('GET', sessionPath(this.sandboxId), 'json', { timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' }))
  }

  /** Whether the sandbox exists and its kernel is not dead. */
  async isRunning(opts?: { requestTimeoutMs?: number }): Promise<boolean> {
    try {
      const info = await this.getInfo(opts)
      return info.kernelState !== 'dead' && info.state !== 'paused' && !info.hibernated
    } catch (e) {
      if (e instanceof NotFoundError) return false
      throw e
    }
  }

  /** CPU and memory (the sandbox's cgroup) and disk (the workspace): one sample, as a one-element list like E2B's. */
  /**
   * Replaces the sandbox's network rules while it runs (E2B's):
   * `{ allowOut, denyOut }`. New connections follow them at once and open
   * ones they refuse are closed. A sandbox created without a network has
   * none to change (a SandboxError, status 409).
   */
  async updateNetwork(network: { allowOut?: string[]; denyOut?: string[] }, opts?: { requestTimeoutMs?: number }): Promise<void> {
    const rules = networkRules(network) ?? { allow: ['*'] }
    await this.connectionConfig.request('PATCH', sessionPath(this.sandboxId), 'json', {
      json: { network: rules },
      timeoutMs: opts?.requestTimeoutMs,
      what: 'sandbox',
    })
  }

  /**
   * The host of the preview of a server the sandbox runs on `port` (E2B's
   * getHost): `http(s)://` + host opens it, until the sandbox ends. The
   * gateway must serve previews (`--preview-listen`).
   */
  getHost(port: number): string {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidArgumentError('port must be within 1..65535')
    if (!this.previewHost) throw new SandboxError('this gateway serves no previews (start it with --preview-listen), or the sandbox was not created or connected by this object')
    return `${port}-${this.previewHost}`
  }

  /** The TCP ports the sandbox's processes listen on, lowest first (its kernels' own among them). */
  async ports(opts?: { requestTimeoutMs?: number }): Promise<Port[]> {
    const out = await this.connectionConfig.request('GET', sessionPath(this.sandboxId, 'ports'), 'json', { timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' })
    return (out?.ports ?? []).map((p: any) => ({ port: Number(p.port), address: String(p.address) }))
  }

  /**
   * The preview of `port`: `url` opens it in a browser (its token becomes
   * a cookie of the preview's host) for `expiresS` seconds (default an
   * hour, at most a day) or until the sandbox ends; `token` goes in the
   * `Glassroom-Preview-Token` header of other programs' requests.
   */
  async preview(port: number, opts?: { expiresS?: number; requestTimeoutMs?: number }): Promise<Preview> {
    const body: Record<string, unknown> = { port }
    if (opts?.expiresS !== undefined) body.expires_s = opts.expiresS
    const out = await this.connectionConfig.request('POST', sessionPath(this.sandboxId, 'previews'), 'json', { json: body, timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' })
    return { port: Number(out.port), host: String(out.host), url: String(out.url), token: String(out.token), expiresAt: new Date(out.expires_at) }
  }

  /** A signed URL that downloads `path` without the API key (E2B's); it expires after `useSignatureExpiration` seconds (default an hour, at most a day) or with the sandbox. */
  async downloadUrl(path: string, opts?: { user?: string; useSignatureExpiration?: number }): Promise<string> {
    checkUser(opts?.user)
    return this.files.url(path, 'read', { expiresS: opts?.useSignatureExpiration })
  }

  /** A signed URL that uploads `path` without the API key (E2B's): a multipart form's "file" part by POST, or the body by PUT. */
  async uploadUrl(path?: string, opts?: { user?: string; useSignatureExpiration?: number }): Promise<string> {
    checkUser(opts?.user)
    if (!path) throw new InvalidArgumentError("glassroom's upload URLs name their file: pass a path")
    return this.files.url(path, 'write', { expiresS: opts?.useSignatureExpiration })
  }

  /**
   * The sandbox's CPU, memory and disk use over time: the gateway samples
   * it every 5 s (E2B's collection interval) and keeps the last ten
   * minutes; the list holds the samples within `start`..`end` (each
   * widened by 5 s, as E2B's buckets are), oldest first, ending with a
   * sample of now when the range reaches now.
   */
  async getMetrics(opts?: { requestTimeoutMs?: number; start?: Date | string | number; end?: Date | string | number }): Promise<SandboxMetrics[]> {
    const q = new URLSearchParams()
    if (opts?.start !== undefined) q.set('start', new Date(new Date(opts.start).getTime() - METRICS_INTERVAL_MS).toISOString())
    if (opts?.end !== undefined) q.set('end', new Date(new Date(opts.end).getTime() + METRICS_INTERVAL_MS).toISOString())
    const path = sessionPath(this.sandboxId, 'metrics/history') + (q.toString() !== '' ? `?${q}` : '')
    const h = await this.connectionConfig.request('GET', path, 'json', { timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' })
    const samples: any[] = Array.isArray(h?.samples) ? h.samples : []
    return samples.map((m) => ({
      timestamp: new Date(m?.timestamp ?? Date.now()),
      cpuUsedPct: Number(m?.cpu_used_pct ?? 0),
      cpuCount: Number(m?.cpu_count ?? 0),
      memUsed: Number(m?.mem_used ?? 0),
      memTotal: Number(m?.mem_total ?? 0),
      memCache: Number(m?.mem_cache ?? 0),
      diskUsed: Number(m?.disk_used ?? 0),
      diskTotal: Number(m?.disk_total ?? 0),
    }))
  }

  /**
   * Freezes the whole sandbox until `resume()` (or `Sandbox.connect`);
   * code and commands are refused meanwhile. `keepMemory: false`
   * hibernates it instead: its workspace and variables go to a snapshot
   * and its sandbox is freed, its id kept; uses are refused (a
   * SandboxError, code `session_hibernated`) until `connect` or `resume`
   * wakes it, or, with its lifecycle's `autoResume`, its next use does.
   */
  async pause(opts?: SandboxPauseOpts): Promise<boolean> {
    const hibernate = opts?.keepMemory === false
    await this.connectionConfig.request('POST', sessionPath(this.sandboxId, 'pause'), 'json', {
      json: hibernate ? { keep_memory: false } : undefined,
      timeoutMs: opts?.requestTimeoutMs ?? (hibernate ? this.slowTimeoutMs : undefined),
      what: 'sandbox',
    })
    return true
  }

  /** E2B's name for `pause` while it was in beta. */
  async betaPause(opts?: SandboxPauseOpts): Promise<boolean> {
    return this.pause(opts)
  }

  /** glassroom: thaws a paused sandbox, or wakes a hibernated one (its snapshot restored). */
  async resume(opts?: { requestTimeoutMs?: number }): Promise<void> {
    await this.connectionConfig.request('POST', sessionPath(this.sandboxId, 'resume'), 'json', { timeoutMs: opts?.requestTimeoutMs ?? this.slowTimeoutMs, what: 'sandbox' })
  }

  /** The request timeout of a call that snapshots or restores a sandbox: the connection's, at least two minutes (unless unlimited). */
  private get slowTimeoutMs(): number {
    const t = this.connectionConfig.requestTimeoutMs
    return t > 0 ? Math.max(t, 120_000) : t
  }

  /**
   * Snapshots the sandbox (E2B's): its workspace and each context's
   * variables (those its kernel can capture: `contexts[].uncaptured` says
   * which were not, and why); it goes on running. The snapshot outlives
   * the sandbox until `Sandbox.deleteSnapshot`; `Sandbox.create(snapshotId)`
   * starts a sandbox from it. `name` (1 to 128 of A-Z a-z 0-9 . _ -)
   * labels it: `names` holds it, `listSnapshots({ name })` finds it.
   */
  async createSnapshot(opts?: { name?: string; requestTimeoutMs?: number }): Promise<SnapshotInfo> {
    const json = opts?.name ? { name: opts.name } : {}
    const out = await this.connectionConfig.request('POST', sessionPath(this.sandboxId, 'snapshots'), 'json', { json, ok: [201], timeoutMs: opts?.requestTimeoutMs ?? this.slowTimeoutMs, what: 'sandbox' })
    return snapshotInfo(out)
  }

  /** The snapshots of this sandbox, newest first, page by page (E2B's). */
  listSnapshots(opts?: Omit<SnapshotListOpts, 'sandboxId'>): SnapshotPaginator {
    return new SnapshotPaginator({ ...this.connectionConfig.toOpts(), ...(opts ?? {}), sandboxId: this.sandboxId })
  }

  /**
   * Starts `count` sandboxes (default 1) from a capture of this one, each
   * with its workspace and variables (`restore` says what came back),
   * template, language, limits, network, lifecycle and metadata; this
   * sandbox goes on. Each fork succeeds or fails on its own: the list
   * holds a Sandbox or the Error that fork met, in order.
   */
  async fork(opts?: SandboxForkOpts): Promise<Array<this | Error>> {
    const count = opts?.count ?? 1
    if (!Number.isInteger(count) || count < 1) throw new InvalidArgumentError('count must be a positive integer')
    const ctor = this.constructor as typeof Sandbox
    const timeoutMs = opts?.timeoutMs ?? ctor.defaultTimeoutMs
    if (timeoutMs !== undefined && !(timeoutMs > 0)) throw new InvalidArgumentError('timeoutMs must be positive')
    const out = await this.connectionConfig.request('POST', sessionPath(this.sandboxId, 'fork'), 'json', {
      json: { count },
      ok: [201],
      timeoutMs: opts?.requestTimeoutMs ?? this.slowTimeoutMs,
      what: 'sandbox',
    })
    const forks: any[] = Array.isArray(out?.forks) ? out.forks : []
    return await Promise.all(forks.map(async (f): Promise<this | Error> => {
      if (!f?.session) return forkError(f?.error)
      const sbx = ctor.fromSession(this.connectionConfig, f.session) as this
      if (timeoutMs === undefined) return sbx
      try {
        await sbx.setTimeout(timeoutMs)
        return sbx
      } catch (e) {
        await sbx.kill().catch(() => {})
        return e instanceof Error ? e : new SandboxError(String(e))
      }
    }))
  }

  /** glassroom: interrupts running code (of one context, or every one). */
  async interrupt(context?: Context | string): Promise<void> {
    await this.connectionConfig.request('POST', sessionPath(this.sandboxId, 'interrupt'), 'none', { ok: [204], query: { context: context === undefined ? undefined : contextId(context) } })
  }

  async createCodeContext(opts: CreateCodeContextOpts = {}): Promise<Context> {
    const body: Record<string, unknown> = { language: opts.language || 'python' }
    if (opts.cwd) body.cwd = opts.cwd
    return toContext(await this.connectionConfig.request('POST', sessionPath(this.sandboxId, 'contexts'), 'json', { json: body, ok: [201], timeoutMs: opts.requestTimeoutMs ?? Math.max(this.connectionConfig.requestTimeoutMs, 120_000) }))
  }

  /**
   * The sandbox's contexts. As E2B's, the list has a Python and a
   * JavaScript context from the start (PENDING_DEFAULTS: the JavaScript
   * one is listed with the id 'javascript' until its first use).
   */
  async listCodeContexts(): Promise<Context[]> {
    const raw = await this.rawContexts()
    const started = new Set(raw.filter((c) => c?.default).map((c) => c.language))
    const pending = PENDING_DEFAULTS.filter((l) => !started.has(l)).map((l) => ({ id: l, language: l, cwd: HOME }))
    const ctxs = raw.map(toContext)
    return [...ctxs.slice(0, 1), ...pending, ...ctxs.slice(1)]
  }

  private async rawContexts(): Promise<any[]> {
    const out = await this.connectionConfig.request('GET', sessionPath(this.sandboxId, 'contexts'), 'json', { what: 'sandbox' })
    return Array.isArray(out?.contexts) ? out.contexts.filter((c: unknown) => c && typeof c === 'object') : []
  }

  /** The id of a pending default's context once started; null before. */
  private async startedDefault(id: string): Promise<string | null> {
    if (!PENDING_DEFAULTS.includes(id)) return id
    const c = (await this.rawContexts()).find((x) => x.default && x.language === id)
    return c ? String(c.id) : null
  }

  async restartCodeContext(context: Context | string): Promise<void> {
    const id = await this.startedDefault(contextId(context))
    if (id === null) return // not started: nothing to restart
    const path = id === 'default' ? sessionPath(this.sandboxId, 'restart') : sessionPath(this.sandboxId, 'contexts', encodeURIComponent(id), 'restart')
    await this.connectionConfig.request('POST', path, 'none', { ok: [204], timeoutMs: Math.max(this.connectionConfig.requestTimeoutMs, 120_000) })
  }

  async removeCodeContext(context: Context | string): Promise<void> {
    const id = await this.startedDefault(contextId(context))
    if (id === null) return // not started: nothing to remove
    await this.connectionConfig.request('DELETE', sessionPath(this.sandboxId, 'contexts', encodeURIComponent(id)), 'none', { ok: [204] })
  }

  /**
   * Runs code in one of the sandbox's kernels; variables persist between
   * calls. `context` runs it there; `language` in that language's default
   * context (started on first use); neither, in the first context.
   * Code that raises is not a rejection: `execution.error` is set. Past
   * `timeoutMs` the code is interrupted and this throws TimeoutError.
   */
  async runCode(code: string, opts?: RunCodeOpts & { language?: RunCodeLanguage }): Promise<Execution>
  async runCode(code: string, opts?: RunCodeOpts & { context?: Context }): Promise<Execution>
  async runCode(code: string, opts: RunCodeOpts & { language?: string; context?: Context | string } = {}): Promise<Execution> {
    if (typeof code !== 'string') throw new InvalidArgumentError('code must be a string')
    const frame: Record<string, unknown> = { code }
    if (opts.language) frame.language = opts.language
    if (opts.context !== undefined) {
      const id = contextId(opts.context)
      if (PENDING_DEFAULTS.includes(id)) frame.language = id // its default context, started on first use
      else frame.context = id
    }
    if (opts.envs && Object.keys(opts.envs).length) frame.envs = opts.envs
    if (opts.cwd) frame.cwd = opts.cwd
    if (opts.userExpressions !== undefined) {
      const ues = opts.userExpressions
      if (!ues || typeof ues !== 'object' || Array.isArray(ues) || !Object.values(ues).every((v) => typeof v === 'string')) {
        throw new InvalidArgumentError('userExpressions must map names to expressions (strings)')
      }
      if (Object.keys(ues).length) frame.user_expressions = ues
    }
    if (opts.timeoutMs && opts.timeoutMs > 0) frame.timeout_s = opts.timeoutMs / 1000
    let x: Execution
    try {
      x = await this.runWs(frame, opts)
    } catch (e) {
      throw await this.explain(e)
    }
    if (x.status === 'timeout') {
      const err = new TimeoutError(`Execution timed out: the code ran past its timeout and was interrupted${x.reason ? ' (' + x.reason + ')' : ''}`)
      ;(err as any).execution = x
      throw err
    }
    if (x.status === 'died' && !(await this.isRunning().catch(() => true))) {
      throw new TimeoutError(`${KILLED}: the sandbox is gone (killed, or past its lifetime)`)
    }
    if (!x.error && x.status === 'died') x.error = new ExecutionError('DeadKernelError', x.reason || 'the kernel died', '')
    if (!x.error && x.status === 'interrupted') x.error = new ExecutionError('KeyboardInterrupt', x.reason || 'interrupted', '')
    return x
  }

  /** A failure during a call, explained: a sandbox that vanished is E2B's TimeoutError. */
  private async explain(e: unknown): Promise<unknown> {
    if (e instanceof TimeoutError || (e as any)?.name === 'AbortError') return e
    if (e instanceof SandboxError && !(e instanceof NotFoundError) && !(e as any).status) {
      try {
        await this.getInfo()
      } catch (g) {
        if (g instanceof NotFoundError) return new TimeoutError(`${KILLED}: the sandbox is gone (killed, or past its lifetime)`, { cause: e })
      }
    }
    return e
  }

  private async runWs(frame: Record<string, unknown>, opts: RunCodeOpts): Promise<Execution> {
    const conn = this.connectionConfig
    let ws
    try {
      ws = await openWebSocket(conn, sessionPath(this.sandboxId, 'ws'), undefined, opts.requestTimeoutMs ?? conn.requestTimeoutMs)
    } catch (e) {
      const info = await this.getInfo() // a missing sandbox is a NotFoundError
      if (info.hibernated) throw errorFromStatus(409, 'session_hibernated', 'the sandbox is hibernated (its sandbox freed, its state in a snapshot): connect or resume wakes it', 'sandbox')
      throw e
    }
    const id = 'js-' + Math.random().toString(36).slice(2) + Date.now().toString(36)
    const x = new Execution()
    let ranIn = typeof frame.context === 'string' ? frame.context : undefined
    let chain: Promise<unknown> = Promise.resolve()
    const call = (fn: (() => unknown) | undefined) => {
      if (fn) chain = chain.then(fn)
    }
    return await new Promise<Execution>((resolve, reject) => {
      let settled = false
      const grace = opts.requestTimeoutMs ?? conn.requestTimeoutMs
      const limit = opts.timeoutMs && opts.timeoutMs > 0 && grace > 0 ? opts.timeoutMs + grace : 0
      const timer = limit > 0 ? setTimeout(() => {
        done(new TimeoutError(`Execution timed out: no end from the gateway within ${limit} ms`))
        try {
          ws.send(JSON.stringify({ type: 'interrupt', ...(ranIn ? { context: ranIn } : {}) }))
        } catch {
          // closing anyway
        }
      }, limit) : undefined
      const onAbort = () => {
        try {
          ws.send(JSON.stringify({ type: 'interrupt', ...(ranIn ? { context: ranIn } : {}) }))
        } catch {
          // closing anyway
        }
        done(opts.signal?.reason ?? new SandboxError('aborted'))
      }
      opts.signal?.addEventListener('abort', onAbort)
      const done = (err?: unknown) => {
        if (settled) return
        settled = true
        if (timer) clearTimeout(timer)
        opts.signal?.removeEventListener('abort', onAbort)
        ws.onmessage = null
        ws.onclose = null
        ws.close()
        if (err) {
          reject(err)
        } else {
          chain.then(() => resolve(x), reject)
        }
      }
      ws.onerror = () => {}
      ws.onclose = (ev) => done(new SandboxError(`the WebSocket to the gateway closed during the execution (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''})`))
      ws.onmessage = (m) => {
        let ev: any
        try {
          ev = JSON.parse(frameText(m.data))
        } catch {
          return
        }
        if (!ev || ev.id !== id) return
        if (typeof ev.context === 'string') ranIn = ev.context
        switch (ev.type) {
          case 'rejected': {
            const msg = `${ev.code}: ${ev.message}`
            done(/^(bad_request|bad_path)$/.test(ev.code) || /invalid|unknown|not installed|refused/i.test(ev.message ?? '') ? new InvalidArgumentError(msg, { code: ev.code }) : new SandboxError(msg, { code: ev.code }))
            return
          }
          case 'input_request':
            ws.send(JSON.stringify({ type: 'input_reply', id, value: '' }))
            return
          case 'file':
            x.files.push({ path: String(ev.path), size: Number(ev.size ?? 0), change: String(ev.change ?? '') })
            return
          case 'done':
            finish(x, ev)
            done()
            return
        }
        const item = applyEvent(x, ev)
        if (ev.type === 'stream') {
          const msg = new OutputMessage(String(ev.text ?? ''), Date.now() * 1000, ev.name === 'stderr')
          const cb = ev.name === 'stderr' ? opts.onStderr : opts.onStdout
          if (cb) call(() => cb(msg))
        } else if (item instanceof Result) {
          if (opts.onResult) call(() => opts.onResult!(item))
        } else if (item instanceof ExecutionError) {
          if (opts.onError) call(() => opts.onError!(item))
        }
      }
      ws.send(JSON.stringify({ type: 'execute', id, ...frame }))
    })
  }
}
