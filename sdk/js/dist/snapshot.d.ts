import { type ConnectionOpts } from './connection.js';
/** A snapshot's id (`snap-` and 24 hex digits): `Sandbox.create(id)` takes one where E2B takes a template. */
export declare const SNAPSHOT_ID: RegExp;
/** A name of a context's state that a snapshot (or a restore) lacks, and why (`*`: all of the kernel's variables, as for JavaScript). */
export interface SnapshotMiss {
    name: string;
    reason: string;
}
/** One context of a snapshot: its kernel's variables that were captured, and those that could not be. */
export interface SnapshotContext {
    /** Its id in the sandbox the snapshot was taken of. */
    context: string;
    language: string;
    cwd: string;
    /** Whether it was its language's default context. */
    default: boolean;
    /** The names its kernel's state holds. */
    captured: string[];
    uncaptured: SnapshotMiss[];
}
/**
 * A snapshot (E2B's SnapshotInfo): a captured sandbox, its workspace and
 * its contexts' variables. `Sandbox.create(snapshotId)` (or
 * `Sandbox.create({ snapshot })`) starts a sandbox from it.
 */
export interface SnapshotInfo {
    snapshotId: string;
    /** E2B's names of the snapshot: its name, when `createSnapshot` gave one. */
    names: string[];
    /** glassroom: the sandbox it was taken of. */
    sandboxId?: string;
    /** glassroom */
    createdAt?: Date;
    /** glassroom: its archive's size. */
    sizeBytes?: number;
    /** glassroom: what was captured of each context. */
    contexts?: SnapshotContext[];
    /** glassroom: the snapshot as the gateway answered it. */
    raw?: Record<string, any>;
}
/** Options of `createSnapshot` (E2B's). */
export interface CreateSnapshotOpts extends ConnectionOpts {
    /** A label for the snapshot (1 to 128 of A-Z a-z 0-9 . _ -): `names` holds it, `listSnapshots({ name })` finds it. */
    name?: string;
}
/** Options of `Sandbox.listSnapshots` (E2B's). */
export interface SnapshotListOpts extends ConnectionOpts {
    /** Only the snapshots of this sandbox. */
    sandboxId?: string;
    /** Only the snapshots of this name (`createSnapshot({ name })`), or of this id. */
    name?: string;
    /** Snapshots per page (default: all in one page). */
    limit?: number;
    /** The page after the one whose `nextToken` this is. */
    nextToken?: string;
}
/** What one context of a sandbox started from a snapshot got of it. */
export interface RestoredContext {
    /** Its id in the new sandbox. */
    context: string;
    /** Its id in the snapshot. */
    from: string;
    language: string;
    /** The names restored. */
    restored: string[];
    /** The names that were not, and why. */
    failed: SnapshotMiss[];
    /** Why none of its variables came back (its kernel runs, empty). */
    error?: string;
}
/** What a sandbox started from a snapshot (or a fork) got of it (`sbx.restore`). */
export interface RestoreReport {
    snapshotId: string;
    /** The workspace could not be restored (the kernels then start empty). */
    error?: string;
    contexts: RestoredContext[];
}
/** The gateway's snapshot JSON as a SnapshotInfo. */
export declare function snapshotInfo(s: any): SnapshotInfo;
/** A session's `restore` as a RestoreReport (undefined when it has none). */
export declare function restoreReport(r: any): RestoreReport | undefined;
/** `/v1/snapshots/{id}`. */
export declare function snapshotPath(id: string): string;
/** One snapshot of this API key (a NotFoundError when it has none of that id). */
export declare function getSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<SnapshotInfo>;
/** Deletes a snapshot; false if this API key had none of that id. */
export declare function deleteSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<boolean>;
/**
 * Pages of `Sandbox.listSnapshots`, newest first:
 * `while (p.hasNext) items.push(...await p.nextItems())`. The gateway
 * answers every snapshot at once; `limit` pages them here.
 */
export declare class SnapshotPaginator {
    private readonly opts;
    private _hasNext;
    private _nextToken?;
    private readonly conn;
    constructor(opts?: SnapshotListOpts);
    get hasNext(): boolean;
    get nextToken(): string | undefined;
    nextItems(): Promise<SnapshotInfo[]>;
}
