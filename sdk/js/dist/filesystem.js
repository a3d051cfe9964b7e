import { frameText, openWebSocket, sessionPath } from './connection.js';
import { checkUser, FileNotFoundError, InvalidArgumentError, NotFoundError, SandboxError } from './errors.js';
import { filesUrlPath, HOME, sandboxPath, toAbsolute, toWorkspacePath } from './paths.js';
/** What a path is. */
export var FileType;
(function (FileType) {
    FileType["FILE"] = "file";
    FileType["DIR"] = "dir";
})(FileType || (FileType = {}));
export var FilesystemEventType;
(function (FilesystemEventType) {
    FilesystemEventType["CHMOD"] = "chmod";
    FilesystemEventType["CREATE"] = "create";
    FilesystemEventType["REMOVE"] = "remove";
    FilesystemEventType["RENAME"] = "rename";
    FilesystemEventType["WRITE"] = "write";
})(FilesystemEventType || (FilesystemEventType = {}));
/** A running `watchDir`; `stop()` ends it. */
export class WatchHandle {
    ws;
    onExit;
    stopped = false;
    /** @internal */
    constructor(ws, onExit, timeoutMs = 0) {
        this.ws = ws;
        this.onExit = onExit;
        let timer;
        if (timeoutMs > 0)
            timer = setTimeout(() => void this.stop(), timeoutMs);
        ws.onclose = (ev) => {
            if (timer)
                clearTimeout(timer);
            if (this.stopped)
                return;
            this.stopped = true;
            void this.onExit?.(ev.code === 1000 ? undefined : new SandboxError(`the watch ended (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''})`));
        };
    }
    /** Stops watching. */
    async stop() {
        if (this.stopped)
            return;
        this.stopped = true;
        this.ws.close(1000);
        await this.onExit?.();
    }
}
function bytesOf(data) {
    if (typeof data === 'string')
        return new TextEncoder().encode(data);
    if (data instanceof ArrayBuffer)
        return new Uint8Array(data);
    if (ArrayBuffer.isView(data))
        return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    return data;
}
function baseName(p) {
    const parts = p.replace(/\/+$/, '').split('/');
    return parts[parts.length - 1] || '';
}
/** `{ metadata }` when m is a non-empty object of strings, else nothing. */
function metadataOf(m) {
    if (!m || typeof m !== 'object' || Array.isArray(m) || !Object.keys(m).length)
        return {};
    return { metadata: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, String(v)])) };
}
/** `ls -l`'s form of a type and permission bits: "drwxr-xr-x". */
function permissions(type, mode) {
    const first = type === 'dir' ? 'd' : type === 'symlink' ? 'l' : '-';
    return first + [...'rwxrwxrwx'].map((ch, i) => (mode & (1 << (8 - i)) ? ch : '-')).join('');
}
function entry(e) {
    const rel = String(e.path ?? e.name ?? '');
    const mode = (Number(e.mode) & 0o7777) || (e.type === 'dir' ? 0o755 : 0o644);
    // E2B's: a symlink is the type of what it points to, with its target.
    const type = e.type === 'symlink' && e.target_type ? e.target_type : e.type;
    return {
        ...metadataOf(e.metadata),
        ...(typeof e.symlink_target === 'string' && e.symlink_target ? { symlinkTarget: e.symlink_target } : {}),
        name: String(e.name ?? baseName(rel)),
        type: type === 'dir' ? FileType.DIR : FileType.FILE,
        path: toAbsolute(rel),
        size: Number(e.size ?? 0),
        mode,
        permissions: permissions(String(e.type ?? 'file'), mode),
        owner: 'user',
        group: 'user',
        ...(e.mtime ? { modifiedTime: new Date(e.mtime) } : {}),
    };
}
/**
 * The sandbox's workspace (/home/user): paths are absolute under
 * /home/user (or /workspace), or relative to it. The sandbox's other
 * files are read-only: `read`, `exists` and `getInfo` reach them
 * (/proc/sys/kernel/random/boot_id), as the sandbox's user sees them.
 */
export class Filesystem {
    conn;
    sandboxId;
    /** @internal */
    constructor(conn, sandboxId) {
        this.conn = conn;
        this.sandboxId = sandboxId;
    }
    filePath(p) {
        if (typeof p !== 'string')
            throw new InvalidArgumentError('a path is required');
        return sessionPath(this.sandboxId, 'files', filesUrlPath(p));
    }
    async read(path, opts = {}) {
        checkUser(opts?.user);
        const outside = sandboxPath(path);
        const p = outside === undefined ? this.filePath(path) : sessionPath(this.sandboxId, 'sandbox-files');
        const init = { timeoutMs: opts.requestTimeoutMs, what: 'file', ...(outside === undefined ? {} : { query: { path: outside } }) };
        switch (opts.format ?? 'text') {
            case 'bytes':
                return this.conn.request('GET', p, 'bytes', init);
            case 'blob':
                return new Blob([(await this.conn.request('GET', p, 'bytes', init))]);
            case 'stream': {
                const res = await this.conn.request('GET', p, 'response', { ...init, timeoutMs: 0 });
                return res.body ?? new ReadableStream({ start: (c) => c.close() });
            }
            default:
                return this.conn.request('GET', p, 'text', init);
        }
    }
    async write(pathOrFiles, dataOrOpts, opts) {
        checkUser((typeof pathOrFiles === 'string' ? opts : dataOrOpts)?.user);
        if (typeof pathOrFiles !== 'string' && !Array.isArray(pathOrFiles)) {
            throw new InvalidArgumentError('Path or files are required'); // E2B's words
        }
        if (Array.isArray(pathOrFiles)) {
            const o = dataOrOpts;
            const out = [];
            for (const f of pathOrFiles)
                out.push(await this.writeOne(f.path, f.data, o));
            return out;
        }
        if (dataOrOpts === undefined || dataOrOpts === null)
            throw new InvalidArgumentError('data is required');
        if (Array.isArray(dataOrOpts)) {
            // E2B's words
            throw new InvalidArgumentError('Cannot specify both path and array of files. You have to specify either path and data for a single file or an array for multiple files.');
        }
        return this.writeOne(pathOrFiles, dataOrOpts, opts);
    }
    /** Writes several files (E2B's writeFiles). */
    async writeFiles(files, opts) {
        checkUser(opts?.user);
        return this.write(files, opts);
    }
    async writeOne(path, data, opts) {
        const out = await this.conn.request('PUT', this.filePath(path), 'json', {
            body: bytesOf(data),
            contentType: 'application/octet-stream',
            ok: [200, 201],
            timeoutMs: opts?.requestTimeoutMs,
            ...(opts?.metadata && Object.keys(opts.metadata).length ? { headers: { 'Glassroom-File-Metadata': JSON.stringify(opts.metadata) } } : {}),
        });
        const rel = String(out?.path ?? toWorkspacePath(path));
        return { name: baseName(rel), type: FileType.FILE, path: toAbsolute(rel), ...metadataOf(out?.metadata) };
    }
    /** A directory's entries (depth 1 by default; deeper levels follow their parent). */
    async list(path, opts = {}) {
        checkUser(opts?.user);
        const depth = opts.depth ?? 1;
        if (!Number.isInteger(depth) || depth < 1)
            throw new InvalidArgumentError('depth should be at least one'); // E2B's words
        const out = [];
        const walk = async (dir, level) => {
            const res = await this.conn.request('GET', sessionPath(this.sandboxId, 'files'), 'json', {
                query: { path: toWorkspacePath(dir) },
                timeoutMs: opts.requestTimeoutMs,
                what: 'file',
            });
            for (const e of Array.isArray(res?.entries) ? res.entries : []) {
                const info = entry(e);
                out.push(info);
                if (info.type === FileType.DIR && level < depth)
                    await walk(info.path, level + 1);
            }
        };
        await walk(path, 1);
        return out;
    }
    /** Whether a file or directory exists. */
    async exists(path, opts) {
        checkUser(opts?.user);
        try {
            await this.getInfo(path, opts);
            return true;
        }
        catch (e) {
            if (e instanceof NotFoundError)
                return false;
            throw e;
        }
    }
    /** A file's or directory's entry. FileNotFoundError if it does not exist. */
    async getInfo(path, opts) {
        checkUser(opts?.user);
        const outside = sandboxPath(path);
        if (outside !== undefined) {
            // The sandbox's own file system: its entry, a last symlink not followed.
            const res = await this.conn.request('GET', sessionPath(this.sandboxId, 'sandbox-files', 'info'), 'json', {
                query: { path: outside },
                timeoutMs: opts?.requestTimeoutMs,
                what: 'file',
            });
            return entry(res);
        }
        const rel = toWorkspacePath(path).replace(/\/+$/, '');
        if (rel === '' || rel === '.') {
            return { name: 'user', type: FileType.DIR, path: HOME, size: 0, mode: 0, permissions: '', owner: 'user', group: 'user' };
        }
        const i = rel.lastIndexOf('/');
        const parent = i < 0 ? '' : rel.slice(0, i);
        const name = rel.slice(i + 1);
        let res;
        try {
            res = await this.conn.request('GET', sessionPath(this.sandboxId, 'files'), 'json', { query: { path: parent }, timeoutMs: opts?.requestTimeoutMs, what: 'file' });
        }
        catch (e) {
            if (e instanceof NotFoundError || e?.status === 409)
                throw new FileNotFoundError(`path '${path}' does not exist`);
            throw e;
        }
        const found = (Array.isArray(res?.entries) ? res.entries : []).find((e) => e.name === name);
        if (!found) {
            if (res?.truncated) {
                // A directory too big to list whole: ask for the file itself.
                const st = await this.conn.request('HEAD', this.filePath(rel), 'none', { ok: [200, 404], timeoutMs: opts?.requestTimeoutMs });
                if (st === 200)
                    return entry({ name, path: rel, type: 'file' });
            }
            throw new FileNotFoundError(`path '${path}' does not exist`);
        }
        return entry(found);
    }
    /** Removes a file, or a directory with its contents; a missing path is no error (as in E2B). */
    async remove(path, opts) {
        checkUser(opts?.user);
        try {
            await this.conn.request('DELETE', this.filePath(path), 'none', { ok: [204, 200], timeoutMs: opts?.requestTimeoutMs, what: 'other' });
        }
        catch (e) {
            // The file is missing: fine. The sandbox is missing: an error.
            if (!(e instanceof NotFoundError && e.code === 'file_not_found'))
                throw e;
        }
    }
    /** Moves a file or directory; the new path's entry. */
    async rename(oldPath, newPath, opts) {
        checkUser(opts?.user);
        const out = await this.conn.request('POST', sessionPath(this.sandboxId, 'files-move'), 'json', {
            json: { from: toWorkspacePath(oldPath), to: toWorkspacePath(newPath) },
            timeoutMs: opts?.requestTimeoutMs,
            what: 'file',
        });
        if (out && typeof out === 'object' && (out.path || out.name))
            return entry({ ...out, path: out.path ?? toWorkspacePath(newPath) });
        return this.getInfo(newPath, opts);
    }
    /**
     * glassroom: a signed URL for one file that a browser or a bare HTTP
     * client uses without the API key: `operation` 'read' (GET) or 'write'
     * (PUT of the body, or POST of a multipart form's "file" part), for
     * `expiresS` seconds (default 3600, at most a day) or until the sandbox ends.
     */
    async url(path, operation = 'read', opts) {
        const body = { path: toWorkspacePath(path), operation };
        if (opts?.expiresS !== undefined)
            body.expires_s = opts.expiresS;
        const out = await this.conn.request('POST', sessionPath(this.sandboxId, 'files-url'), 'json', { json: body, timeoutMs: opts?.requestTimeoutMs, what: 'sandbox' });
        return this.conn.baseUrl + String(out?.url ?? '');
    }
    /** Makes a directory and its parents; false if it already existed. */
    async makeDir(path, opts) {
        try {
            const info = await this.getInfo(path, opts);
            if (info.type === FileType.DIR)
                return false;
        }
        catch (e) {
            if (!(e instanceof NotFoundError))
                throw e;
        }
        await this.conn.request('PUT', this.filePath(path), 'none', { query: { type: 'dir' }, ok: [200, 201], timeoutMs: opts?.requestTimeoutMs });
        return true;
    }
    /**
     * Watches a directory: `onEvent` is called with each change under it
     * (its direct entries; with `recursive`, its subdirectories' too). A
     * files-API write shows as the file's create, chmod and write (it
     * lands by a rename).
     */
    async watchDir(path, onEvent, opts = {}) {
        let ws;
        try {
            ws = await openWebSocket(this.conn, sessionPath(this.sandboxId, 'files-watch'), {
                path: toWorkspacePath(path),
                recursive: opts.recursive ? 'true' : 'false',
                ...(opts.includeEntry ? { entry: 'true' } : {}),
            }, opts.requestTimeoutMs);
        }
        catch (e) {
            // The socket does not say why; the directory tells.
            await this.getInfo(path, opts);
            throw e;
        }
        let chain = Promise.resolve();
        ws.onmessage = (m) => {
            let ev;
            try {
                ev = JSON.parse(frameText(m.data));
            }
            catch {
                return;
            }
            if (!ev || typeof ev.type !== 'string' || ev.type === 'overflow' || typeof ev.name !== 'string')
                return;
            const event = { name: ev.name, type: ev.type };
            if (ev.entry && typeof ev.entry === 'object')
                event.entry = entry(ev.entry);
            chain = chain.then(() => onEvent(event)).catch(() => { });
        };
        return new WatchHandle(ws, opts.onExit, opts.timeoutMs ?? 0);
    }
}
