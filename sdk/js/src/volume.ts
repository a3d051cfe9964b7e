import { ConnectionConfig, type ConnectionOpts } from './connection.js'
import { NotFoundError } from './errors.js'

/**
 * A named volume of this API key (E2B's `Volume`): storage that outlives
 * its sandboxes, mounted at a path under /home/user
 * (`Sandbox.create({ volumes: { data: '/home/user/data' } })`, or E2B's
 * `volumeMounts: { '/home/user/data': volume }`). `sizeMB` is its quota.
 */
export class Volume {
  readonly name: string
  readonly sizeMB: number
  readonly usedBytes: number
  readonly createdAt: Date
  /** How many live sandboxes mount it. */
  readonly mounts: number

  /** @internal */
  constructor(v: any) {
    this.name = String(v.name)
    this.sizeMB = Number(v.size_mb ?? 0)
    this.usedBytes = Number(v.used_bytes ?? 0)
    this.createdAt = new Date(v.created_at)
    this.mounts = Number(v.mounts ?? 0)
  }

  /** Makes a volume; `sizeMB` defaults to the gateway's (usually 1024). A taken name is a SandboxError with status 409. */
  static async create(name: string, opts?: ConnectionOpts & { sizeMB?: number }): Promise<Volume> {
    const body: Record<string, unknown> = { name }
    if (opts?.sizeMB !== undefined) body.size_mb = opts.sizeMB
    return new Volume(await new ConnectionConfig(opts).request('POST', '/v1/volumes', 'json', { json: body, ok: [201] }))
  }

  /** This key's volumes, by name. */
  static async list(opts?: ConnectionOpts): Promise<Volume[]> {
    const out = await new ConnectionConfig(opts).request('GET', '/v1/volumes', 'json')
    return (out?.volumes ?? []).map((v: any) => new Volume(v))
  }

  /** One volume (a NotFoundError when this key has none of that name). */
  static async getInfo(name: string, opts?: ConnectionOpts): Promise<Volume> {
    return new Volume(await new ConnectionConfig(opts).request('GET', '/v1/volumes/' + encodeURIComponent(name), 'json'))
  }

  /** Deletes a volume and what it holds; false if there was none. A mounted one is a SandboxError with status 409. */
  static async destroy(name: string, opts?: ConnectionOpts): Promise<boolean> {
    try {
      await new ConnectionConfig(opts).request('DELETE', '/v1/volumes/' + encodeURIComponent(name), 'json', { ok: [204] })
      return true
    } catch (e) {
      if (e instanceof NotFoundError) return false
      throw e
    }
  }
}
