import { type ConnectionConfig, frameText, openWebSocket, type WebSocketLike } from './connection.js'
import { SandboxError } from './errors.js'
import type { CommandEvent as WireCommandEvent, ServerFrame } from './wire.js'
import { sessionPath } from './connection.js'

/**
 * A command event from the session's WebSocket (the wire's CommandEvent,
 * generated from the gateway's Go types in wire.ts) with its pid.
 */
export type CommandEvent = WireCommandEvent & { pid: number }

type Listener = (ev: CommandEvent) => void
type Lost = (err: Error) => void

const MAX_BUFFERED_PIDS = 64
const MAX_BUFFERED_EVENTS = 2000

/**
 * One WebSocket to a session, shared by the command handles of one
 * Sandbox object, routing `command` events by pid. It is opened by the
 * first `acquire()` and closed when the last holder releases it.
 * Events of a pid no one watches yet are kept (bounded) so that a handle
 * made right after its command started sees its first output.
 */
export class CommandEvents {
  private ws?: WebSocketLike
  private opening?: Promise<void>
  private holders = 0
  private readonly listeners = new Map<number, { on: Listener; lost: Lost }>()
  private readonly pending = new Map<number, CommandEvent[]>()
  private pendingCount = 0

  constructor(private readonly conn: ConnectionConfig, private readonly sandboxId: string) {}

  /** Opens the socket if needed; pair every call with release(). */
  async acquire(): Promise<void> {
    this.holders++
    try {
      if (!this.ws) {
        if (!this.opening) {
          this.opening = (async () => {
            const ws = await openWebSocket(this.conn, sessionPath(this.sandboxId, 'ws'))
            ws.onmessage = (m) => this.route(m.data)
            ws.onclose = (ev) => this.dropped(new SandboxError(`the WebSocket to the gateway closed (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''}); the sandbox may have ended`))
            ws.onerror = () => {}
            this.ws = ws
          })().finally(() => {
            this.opening = undefined
          })
        }
        await this.opening
      }
    } catch (e) {
      this.holders--
      throw e
    }
  }

  release(): void {
    this.holders = Math.max(0, this.holders - 1)
    if (this.holders === 0 && this.ws) {
      const ws = this.ws
      this.ws = undefined
      ws.onclose = null
      ws.close()
      this.pending.clear()
      this.pendingCount = 0
    }
  }

  /** Routes pid's events to `on` (first the ones that came before), and a lost socket to `lost`. */
  watch(pid: number, on: Listener, lost: Lost): () => void {
    this.listeners.set(pid, { on, lost })
    const early = this.pending.get(pid)
    if (early) {
      this.pending.delete(pid)
      this.pendingCount -= early.length
      for (const ev of early) on(ev)
    }
    return () => {
      if (this.listeners.get(pid)?.on === on) this.listeners.delete(pid)
    }
  }

  private route(data: unknown): void {
    let frame: ServerFrame | null
    try {
      frame = JSON.parse(frameText(data)) as ServerFrame | null
    } catch {
      return
    }
    if (!frame || frame.type !== 'command' || typeof frame.pid !== 'number') return
    const ev: CommandEvent = { ...frame, pid: frame.pid }
    const l = this.listeners.get(ev.pid)
    if (l) {
      l.on(ev)
      return
    }
    if (!this.pending.has(ev.pid) && this.pending.size >= MAX_BUFFERED_PIDS) {
      const oldest = this.pending.keys().next().value as number
      this.pendingCount -= this.pending.get(oldest)!.length
      this.pending.delete(oldest)
    }
    if (this.pendingCount >= MAX_BUFFERED_EVENTS) return
    const list = this.pending.get(ev.pid) ?? []
    list.push(ev)
    this.pending.set(ev.pid, list)
    this.pendingCount++
  }

  private dropped(err: Error): void {
    this.ws = undefined
    const ls = [...this.listeners.values()]
    this.listeners.clear()
    this.pending.clear()
    this.pendingCount = 0
    for (const l of ls) l.lost(err)
  }
}
