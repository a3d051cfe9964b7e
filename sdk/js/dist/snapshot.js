import { ConnectionConfig } from './connection.js';
import { InvalidArgumentError, NotFoundError, SandboxError } from './errors.js';
/** A snapshot's id (`snap-` and 24 hex digits): `Sandbox.create(id)` takes one where E2B takes a template. */
export const SNAPSHOT_ID = /^snap-[0-9a-f]{24}$/;
const misses = (v) => (Array.isArray(v) ? v : []).filter((u) => u && typeof u === 'object').map((u) => ({ name: String(u.name ?? ''), reason: String(u.reason ?? '') }));
const strings = (v) => (Array.isArray(v) ? v.map(String) : []);
/** The gateway's snapshot JSON as a SnapshotInfo. */
export function snapshotInfo(s) {
    const contexts = Array.isArray(s?.contexts) ? s.contexts : [];
    return {
        snapshotId: String(s?.id ?? ''),
        names: s?.name ? [String(s.name)] : [],
        sandboxId: String(s?.session_id ?? ''),
        createdAt: new Date(s?.created_at ?? 0),
        sizeBytes: Number(s?.size_bytes ?? 0),
        contexts: contexts.filter((c) => c && typeof c === 'object').map((c) => ({
            context: String(c.context ?? ''),
            language: String(c.language ?? ''),
            cwd: String(c.cwd ?? ''),
            default: !!c.default,
            captured: strings(c.captured),
            uncaptured: misses(c.uncaptured),
        })),
        raw: s ?? {},
    };
}
/** A session's `restore` as a RestoreReport (undefined when it has none). */
export function restoreReport(r) {
    if (!r || typeof r !== 'object')
        return undefined;
    const out = {
        snapshotId: String(r.snapshot_id ?? ''),
        contexts: (Array.isArray(r.contexts) ? r.contexts : []).filter((c) => c && typeof c === 'object').map((c) => {
            const rc = { context: String(c.context ?? ''), from: String(c.from ?? ''), language: String(c.language ?? ''), restored: strings(c.restored), failed: misses(c.failed) };
            if (c.error)
                rc.error = String(c.error);
            return rc;
        }),
    };
    if (r.error)
        out.error = String(r.error);
    return out;
}
/** `/v1/snapshots/{id}`. */
export function snapshotPath(id) {
    if (!id || typeof id !== 'string')
        throw new InvalidArgumentError('a snapshot id is required');
    return '/v1/snapshots/' + encodeURIComponent(id);
}
/** One snapshot of this API key (a NotFoundError when it has none of that id). */
export async function getSnapshot(snapshotId, opts) {
    return snapshotInfo(await new ConnectionConfig(opts).request('GET', snapshotPath(snapshotId), 'json'));
}
/** Deletes a snapshot; false if this API key had none of that id. */
export async function deleteSnapshot(snapshotId, opts) {
    try {
        await new ConnectionConfig(opts).request('DELETE', snapshotPath(snapshotId), 'none', { ok: [204] });
        return true;
    }
    catch (e) {
        if (e instanceof NotFoundError)
            return false;
        throw e;
    }
}
/**
 * Pages of `Sandbox.listSnapshots`, newest first:
 * `while (p.hasNext) items.push(...await p.nextItems())`. The gateway
 * answers every snapshot at once; `limit` pages them here.
 */
export class SnapshotPaginator {
    opts;
    _hasNext = true;
    _nextToken;
    conn;
    constructor(opts = {}) {
        this.opts = opts;
        if (opts.sandboxId && opts.name)
            throw new InvalidArgumentError('listSnapshots accepts either `sandboxId` or `name`, not both.');
        if (opts.limit !== undefined && !(Number.isInteger(opts.limit) && opts.limit > 0))
            throw new InvalidArgumentError('limit must be a positive integer');
        if (opts.nextToken !== undefined && !/^\d+$/.test(opts.nextToken))
            throw new InvalidArgumentError(`invalid nextToken ${JSON.stringify(opts.nextToken)}`);
        this.conn = new ConnectionConfig(opts);
        this._nextToken = opts.nextToken;
    }
    get hasNext() {
        return this._hasNext;
    }
    get nextToken() {
        return this._nextToken;
    }
    async nextItems() {
        if (!this._hasNext)
            throw new SandboxError('no more items to fetch');
        let all;
        const out = await this.conn.request('GET', '/v1/snapshots', 'json', { query: { session_id: this.opts.sandboxId || undefined } });
        all = (Array.isArray(out?.snapshots) ? out.snapshots : []).map(snapshotInfo);
        const name = this.opts.name;
        if (name)
            all = all.filter((s) => s.snapshotId === name || s.names.includes(name));
        const from = this._nextToken ? Number(this._nextToken) : 0;
        const to = this.opts.limit ? from + this.opts.limit : all.length;
        this._nextToken = to < all.length ? String(to) : undefined;
        this._hasNext = !!this._nextToken;
        return all.slice(from, to);
    }
}
