import { type ConnectionConfig } from './connection.js';
import type { CommandEvent as WireCommandEvent } from './wire.js';
/**
 * A command event from the session's WebSocket (the wire's CommandEvent,
 * generated from the gateway's Go types in wire.ts) with its pid.
 */
export type CommandEvent = WireCommandEvent & {
    pid: number;
};
type Listener = (ev: CommandEvent) => void;
type Lost = (err: Error) => void;
/**
 * One WebSocket to a session, shared by the command handles of one
 * Sandbox object, routing `command` events by pid. It is opened by the
 * first `acquire()` and closed when the last holder releases it.
 * Events of a pid no one watches yet are kept (bounded) so that a handle
 * made right after its command started sees its first output.
 */
export declare class CommandEvents {
    private readonly conn;
    private readonly sandboxId;
    private ws?;
    private opening?;
    private holders;
    private readonly listeners;
    private readonly pending;
    private pendingCount;
    constructor(conn: ConnectionConfig, sandboxId: string);
    /** Opens the socket if needed; pair every call with release(). */
    acquire(): Promise<void>;
    release(): void;
    /** Routes pid's events to `on` (first the ones that came before), and a lost socket to `lost`. */
    watch(pid: number, on: Listener, lost: Lost): () => void;
    private route;
    private dropped;
}
export {};
