import { frameText, openWebSocket } from './connection.js';
import { SandboxError } from './errors.js';
import { sessionPath } from './connection.js';
const MAX_BUFFERED_PIDS = 64;
const MAX_BUFFERED_EVENTS = 2000;
/**
 * One WebSocket to a session, shared by the command handles of one
 * Sandbox object, routing `command` events by pid. It is opened by the
 * first `acquire()` and closed when the last holder releases it.
 * Events of a pid no one watches yet are kept (bounded) so that a handle
 * made right after its command started sees its first output.
 */
export class CommandEvents {
    conn;
    sandboxId;
    ws;
    opening;
    holders = 0;
    listeners = new Map();
    pending = new Map();
    pendingCount = 0;
    constructor(conn, sandboxId) {
        this.conn = conn;
        this.sandboxId = sandboxId;
    }
    /** Opens the socket if needed; pair every call with release(). */
    async acquire() {
        this.holders++;
        try {
            if (!this.ws) {
                if (!this.opening) {
                    this.opening = (async () => {
                        const ws = await openWebSocket(this.conn, sessionPath(this.sandboxId, 'ws'));
                        ws.onmessage = (m) => this.route(m.data);
                        ws.onclose = (ev) => this.dropped(new SandboxError(`the WebSocket to the gateway closed (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''}); the sandbox may have ended`));
                        ws.onerror = () => { };
                        this.ws = ws;
                    })().finally(() => {
                        this.opening = undefined;
                    });
                }
                await this.opening;
            }
        }
        catch (e) {
            this.holders--;
            throw e;
        }
    }
    release() {
        this.holders = Math.max(0, this.holders - 1);
        if (this.holders === 0 && this.ws) {
            const ws = this.ws;
            this.ws = undefined;
            ws.onclose = null;
            ws.close();
            this.pending.clear();
            this.pendingCount = 0;
        }
    }
    /** Routes pid's events to `on` (first the ones that came before), and a lost socket to `lost`. */
    watch(pid, on, lost) {
        this.listeners.set(pid, { on, lost });
        const early = this.pending.get(pid);
        if (early) {
            this.pending.delete(pid);
            this.pendingCount -= early.length;
            for (const ev of early)
                on(ev);
        }
        return () => {
            if (this.listeners.get(pid)?.on === on)
                this.listeners.delete(pid);
        };
    }
    route(data) {
        let frame;
        try {
            frame = JSON.parse(frameText(data));
        }
        catch {
            return;
        }
        if (!frame || frame.type !== 'command' || typeof frame.pid !== 'number')
            return;
        const ev = { ...frame, pid: frame.pid };
        const l = this.listeners.get(ev.pid);
        if (l) {
            l.on(ev);
            return;
        }
        if (!this.pending.has(ev.pid) && this.pending.size >= MAX_BUFFERED_PIDS) {
            const oldest = this.pending.keys().next().value;
            this.pendingCount -= this.pending.get(oldest).length;
            this.pending.delete(oldest);
        }
        if (this.pendingCount >= MAX_BUFFERED_EVENTS)
            return;
        const list = this.pending.get(ev.pid) ?? [];
        list.push(ev);
        this.pending.set(ev.pid, list);
        this.pendingCount++;
    }
    dropped(err) {
        this.ws = undefined;
        const ls = [...this.listeners.values()];
        this.listeners.clear();
        this.pending.clear();
        this.pendingCount = 0;
        for (const l of ls)
            l.lost(err);
    }
}
