/** Where the workspace is inside the sandbox (E2B's home directory). */
export const HOME = '/home/user';
/**
 * A path as the gateway's file API takes it: relative to the workspace.
 * `/home/user/x` and `/workspace/x` become `x`; a relative path stays;
 * anything else is left for the gateway to refuse (400 bad_path).
 */
export function toWorkspacePath(p) {
    if (typeof p !== 'string')
        return p;
    if (p.startsWith('/'))
        p = normalizeAbsolute(p);
    for (const root of [HOME, '/workspace']) {
        if (p === root || p === root + '/')
            return '';
        if (p.startsWith(root + '/'))
            return p.slice(root.length + 1);
    }
    return p;
}
/**
 * The normalized absolute path when `p` lies outside the workspace (a
 * file of the sandbox's own file system, which `read`, `exists` and
 * `getInfo` reach read-only), else undefined.
 */
export function sandboxPath(p) {
    if (typeof p !== 'string' || !p.startsWith('/'))
        return undefined;
    const norm = normalizeAbsolute(p);
    for (const root of [HOME, '/workspace']) {
        if (norm === root || norm.startsWith(root + '/'))
            return undefined;
    }
    return norm;
}
/** An absolute path with `.`, `..` and repeated slashes resolved (as POSIX's normpath does, `//` too). */
function normalizeAbsolute(p) {
    const segs = [];
    for (const s of p.split('/')) {
        if (s === '' || s === '.')
            continue;
        if (s === '..')
            segs.pop();
        else
            segs.push(s);
    }
    return '/' + segs.join('/');
}
/** The absolute path (under /home/user) of a workspace path. */
export function toAbsolute(rel) {
    const r = toWorkspacePath(rel).replace(/^\.\/?/, '').replace(/\/+$/, '');
    if (r.startsWith('/'))
        return r;
    return r ? HOME + '/' + r : HOME;
}
/** The URL path of a file: each segment escaped. */
export function filesUrlPath(p) {
    return toWorkspacePath(p)
        .split('/')
        .map((s) => encodeURIComponent(s))
        .join('/');
}
