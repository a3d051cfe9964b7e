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
    for (const root of [HOME, '/workspace']) {
        if (p === root || p === root + '/')
            return '';
        if (p.startsWith(root + '/'))
            return p.slice(root.length + 1);
    }
    return p;
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
