import { type ConnectionConfig, type WebSocketLike } from './connection.js';
/** What a path is. */
export declare enum FileType {
    FILE = "file",
    DIR = "dir"
}
/** What `write` gives back. */
export interface WriteInfo {
    /** The base name. */
    name: string;
    type?: FileType;
    /** The absolute path in the sandbox (/home/user/...). */
    path: string;
    /** A file's metadata (written with `metadata`), undefined when it has none. */
    metadata?: Record<string, string>;
}
/** One directory entry. */
export interface EntryInfo extends WriteInfo {
    size: number;
    /** Permission bits (0o644...). */
    mode: number;
    /** Not known to glassroom's API: ''. */
    permissions: string;
    owner: string;
    group: string;
    modifiedTime?: Date;
    symlinkTarget?: string;
}
/** A file to write with `write([...])` / `writeFiles`. */
export interface WriteEntry {
    path: string;
    data: string | ArrayBuffer | ArrayBufferView | Blob | ReadableStream;
}
export interface FilesystemRequestOpts {
    requestTimeoutMs?: number;
    /** E2B's: only 'user', the sandbox's one (unprivileged) user; another is refused (checkUser). */
    user?: string;
    /** write: string pairs kept with the file (keys HTTP tokens, values printable ASCII); a file written without them has none. */
    metadata?: Record<string, string>;
}
export interface FilesystemListOpts extends FilesystemRequestOpts {
    /** How deep to list (1: the directory's own entries, the default). */
    depth?: number;
}
export interface FilesystemReadOpts extends FilesystemRequestOpts {
}
export interface WatchOpts extends FilesystemRequestOpts {
    /** Stop watching after this long (ms); 0 (default) never. */
    timeoutMs?: number;
    /** Called when the watch ends (with the error, if it failed). */
    onExit?: (err?: Error) => void | Promise<void>;
    /** Also report changes in subdirectories. */
    recursive?: boolean;
    /** Describe each event's path in `entry` (best effort: not for remove and rename, nor once the path is gone). */
    includeEntry?: boolean;
}
export declare enum FilesystemEventType {
    CHMOD = "chmod",
    CREATE = "create",
    REMOVE = "remove",
    RENAME = "rename",
    WRITE = "write"
}
/** One change under a watched directory: `name` relative to it. */
export interface FilesystemEvent {
    name: string;
    type: FilesystemEventType;
    /** With `includeEntry`: the path as it was when the event was sent. */
    entry?: EntryInfo;
}
/** A running `watchDir`; `stop()` ends it. */
export declare class WatchHandle {
    private readonly ws;
    private readonly onExit?;
    private stopped;
    /** @internal */
    constructor(ws: WebSocketLike, onExit?: ((err?: Error) => void | Promise<void>) | undefined, timeoutMs?: number);
    /** Stops watching. */
    stop(): Promise<void>;
}
/**
 * The sandbox's workspace (/home/user): paths are absolute under
 * /home/user (or /workspace), or relative to it. The sandbox's other
 * files are read-only: `read`, `exists` and `getInfo` reach them
 * (/proc/sys/kernel/random/boot_id), as the sandbox's user sees them.
 */
export declare class Filesystem {
    private readonly conn;
    private readonly sandboxId;
    /** @internal */
    constructor(conn: ConnectionConfig, sandboxId: string);
    private filePath;
    /** Reads a file: as text (default), bytes (Uint8Array), a Blob, or a ReadableStream. */
    read(path: string, opts?: FilesystemReadOpts & {
        format?: 'text';
    }): Promise<string>;
    read(path: string, opts: FilesystemReadOpts & {
        format: 'bytes';
    }): Promise<Uint8Array>;
    read(path: string, opts: FilesystemReadOpts & {
        format: 'blob';
    }): Promise<Blob>;
    read(path: string, opts: FilesystemReadOpts & {
        format: 'stream';
    }): Promise<ReadableStream<Uint8Array>>;
    /** Writes a file (parents made, an existing file replaced), or several. */
    write(path: string, data: WriteEntry['data'], opts?: FilesystemRequestOpts): Promise<WriteInfo>;
    write(files: WriteEntry[], opts?: FilesystemRequestOpts): Promise<WriteInfo[]>;
    /** Writes several files (E2B's writeFiles). */
    writeFiles(files: WriteEntry[], opts?: FilesystemRequestOpts): Promise<WriteInfo[]>;
    private writeOne;
    /** A directory's entries (depth 1 by default; deeper levels follow their parent). */
    list(path: string, opts?: FilesystemListOpts): Promise<EntryInfo[]>;
    /** Whether a file or directory exists. */
    exists(path: string, opts?: FilesystemRequestOpts): Promise<boolean>;
    /** A file's or directory's entry. FileNotFoundError if it does not exist. */
    getInfo(path: string, opts?: FilesystemRequestOpts): Promise<EntryInfo>;
    /** Removes a file, or a directory with its contents; a missing path is no error (as in E2B). */
    remove(path: string, opts?: FilesystemRequestOpts): Promise<void>;
    /** Moves a file or directory; the new path's entry. */
    rename(oldPath: string, newPath: string, opts?: FilesystemRequestOpts): Promise<EntryInfo>;
    /**
     * glassroom: a signed URL for one file that a browser or a bare HTTP
     * client uses without the API key: `operation` 'read' (GET) or 'write'
     * (PUT of the body, or POST of a multipart form's "file" part), for
     * `expiresS` seconds (default 3600, at most a day) or until the sandbox ends.
     */
    url(path: string, operation?: 'read' | 'write', opts?: {
        expiresS?: number;
        requestTimeoutMs?: number;
    }): Promise<string>;
    /** Makes a directory and its parents; false if it already existed. */
    makeDir(path: string, opts?: FilesystemRequestOpts): Promise<boolean>;
    /**
     * Watches a directory: `onEvent` is called with each change under it
     * (its direct entries; with `recursive`, its subdirectories' too). A
     * files-API write shows as the file's create, chmod and write (it
     * lands by a rename).
     */
    watchDir(path: string, onEvent: (event: FilesystemEvent) => void | Promise<void>, opts?: WatchOpts): Promise<WatchHandle>;
}
