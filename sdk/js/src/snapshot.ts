import { ConnectionConfig, type ConnectionOpts } from './connection.js'
import { InvalidArgumentError, NotFoundError, SandboxError } from './errors.js'

/** A snapshot's id (`snap-` and 24 hex digits): `Sandbox.create(id)` takes one where E2B takes a template. */
export const SNAPSHOT_ID = /^snap-[0-9a-f]{24}$/

/** A name of a context's state that a snapshot (or a restore) lacks, and why (`*`: all of the kernel's variables, as for JavaScript). */
export interface SnapshotMiss {
  name: string
  reason: string
}

/** One context of a snapshot: its kernel's variables that were captured, and those that could not be. */
export interface SnapshotContext {
  /** Its id in the sandbox the snapshot was taken of. */
  context: string
  language: string
  cwd: string
  /** Whether it was its language's default context. */
  default: boolean
  /** The names its kernel's state holds. */
  captured: string[]
  uncaptured: SnapshotMiss[]
}

/**
 * A snapshot (E2B's SnapshotInfo): a captured sandbox, its workspace and
 * its contexts' variables. `Sandbox.create(snapshotId)` (or
 * `Sandbox.create({ snapshot })`) starts a sandbox from it.
 */
export interface SnapshotInfo {
  snapshotId: string
  /** E2B's names of the snapshot: its name, when `createSnapshot` gave one. */
  names: string[]
  /** glassroom: the sandbox it was taken of. */
  sandboxId?: string
  /** glassroom */
  createdAt?: Date
  /** glassroom: its archive's size. */
  sizeBytes?: number
  /** glassroom: what was captured of each context. */
  contexts?: SnapshotContext[]
  /** glassroom: the snapshot as the gateway answered it. */
  raw?: Record<string, any>
}

/** Options of `createSnapshot` (E2B's). */
export interface CreateSnapshotOpts extends ConnectionOpts {
  /** A label for the snapshot (1 to 128 of A-Z a-z 0-9 . _ -): `names` holds it, `listSnapshots({ name })` finds it. */
  name?: string
}

/** Options of `Sandbox.listSnapshots` (E2B's). */
export interface SnapshotListOpts extends ConnectionOpts {
  /** Only the snapshots of this sandbox. */
  sandboxId?: string
  /** Only the snapshots of this name (`createSnapshot({ name })`), or of this id. */
  name?: string
  /** Snapshots per page (default: all in one page). */
  limit?: number
  /** The page after the one whose `nextToken` this is. */
  nextToken?: string
}

/** What one context of a sandbox started from a snapshot got of it. */
export interface RestoredContext {
  /** Its id in the new sandbox. */
  context: string
  /** Its id in the snapshot. */
  from: string
  language: string
  /** The names restored. */
  restored: string[]
  /** The names that were not, and why. */
  failed: SnapshotMiss[]
  /** Why none of its variables came back (its kernel runs, empty). */
  error?: string
}

/** What a sandbox started from a snapshot (or a fork) got of it (`sbx.restore`). */
export interface RestoreReport {
  snapshotId: string
  /** The workspace could not be restored (the kernels then start empty). */
  error?: string
  contexts: RestoredContext[]
}

const misses = (v: any): SnapshotMiss[] =>
  (Array.isArray(v) ? v : []).filter((u: any) => u && typeof u === 'object').map((u: any) => ({ name: String(u.name ?? ''), reason: String(u.reason ?? '') }))

const strings = (v: any): string[] => (Array.isArray(v) ? v.map(String) : [])

/** The gateway's snapshot JSON as a SnapshotInfo. */
export function snapshotInfo(s: any): SnapshotInfo {
  const contexts = Array.isArray(s?.contexts) ? s.contexts : []
  return {
    snapshotId: String(s?.id ?? ''),
    names: s?.name ? [String(s.name)] : [],
    sandboxId: String(s?.session_id ?? ''),
    createdAt: new Date(s?.created_at ?? 0),
    sizeBytes: Number(s?.size_bytes ?? 0),
    contexts: contexts.filter((c: any) => c && typeof c === 'object').map((c: any) => ({
      context: String(c.context ?? ''),
      language: String(c.language ?? ''),
      cwd: String(c.cwd ?? ''),
      default: !!c.default,
      captured: strings(c.captured),
      uncaptured: misses(c.uncaptured),
    })),
    raw: s ?? {},
  }
}

/** A session's `restore` as a RestoreReport (undefined when it has none). */
export function restoreReport(r: any): RestoreReport | undefined {
  if (!r || typeof r !== 'object') return undefined
  const out: RestoreReport = {
    snapshotId: String(r.snapshot_id ?? ''),
    contexts: (Array.isArray(r.contexts) ? r.contexts : []).filter((c: any) => c && typeof c === 'object').map((c: any) => {
      const rc: RestoredContext = { context: String(c.context ?? ''), from: String(c.from ?? ''), language: String(c.language ?? ''), restored: strings(c.restored), failed: misses(c.failed) }
      if (c.error) rc.error = String(c.error)
      return rc
    }),
  }
  if (r.error) out.error = String(r.error)
  return out
}

/** `/v1/snapshots/{id}`. */
export function snapshotPath(id: string): string {
  if (!id || typeof id !== 'string') throw new InvalidArgumentError('a snapshot id is required')
  return '/v1/snapshots/' + encodeURIComponent(id)
}

/** One snapshot of this API key (a NotFoundError when it has none of that id). */
export async function getSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<SnapshotInfo> {
  return snapshotInfo(await new ConnectionConfig(opts).request('GET', snapshotPath(snapshotId), 'json'))
}

/** Deletes a snapshot; false if this API key had none of that id. */
export async function deleteSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<boolean> {
  try {
    await new ConnectionConfig(opts).request('DELETE', snapshotPath(snapshotId), 'none', { ok: [204] })
    return true
  } catch (e) {
    if (e instanceof NotFoundError) return false
    throw e
  }
}

/**
 * Pages of `Sandbox.listSnapshots`, newest first:
 * `while (p.hasNext) items.push(...await p.nextItems())`. The gateway
 * answers every snapshot at once; `limit` pages them here.
 */
export class SnapshotPaginator {
  private _hasNext = true
  private _nextToken?: string
  private readonly conn: ConnectionConfig
  constructor(private readonly opts: SnapshotListOpts = {}) {
    if (opts.sandboxId && opts.name) throw new InvalidArgumentError('listSnapshots accepts either `sandboxId` or `name`, not both.')
    if (opts.limit !== undefined && !(Number.isInteger(opts.limit) && opts.limit > 0)) throw new InvalidArgumentError('limit must be a positive integer')
    if (opts.nextToken !== undefined && !/^\d+$/.test(opts.nextToken)) throw new InvalidArgumentError(`invalid nextToken ${JSON.stringify(opts.nextToken)}`)
    this.conn = new ConnectionConfig(opts)
    this._nextToken = opts.nextToken
  }
  get hasNext(): boolean {
    return this._hasNext
  }
  get nextToken(): string | undefined {
    return this._nextToken
  }
  async nextItems(): Promise<SnapshotInfo[]> {
    if (!this._hasNext) throw new SandboxError('no more items to fetch')
    let all: SnapshotInfo[]
    const out = await this.conn.request('GET', '/v1/snapshots', 'json', { query: { session_id: this.opts.sandboxId || undefined } })
    all = (Array.isArray(out?.snapshots) ? out.snapshots : []).map(snapshotInfo)
    const name = this.opts.name
    if (name) all = all.filter((s) => s.snapshotId === name || s.names.includes(name))
    const from = this._nextToken ? Number(this._nextToken) : 0
    const to = this.opts.limit ? from + this.opts.limit : all.length
    this._nextToken = to < all.length ? String(to) : undefined
    this._hasNext = !!this._nextToken
    return all.slice(from, to)
  }
}
