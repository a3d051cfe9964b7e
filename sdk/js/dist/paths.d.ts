/** Where the workspace is inside the sandbox (E2B's home directory). */
export declare const HOME = "/home/user";
/**
 * A path as the gateway's file API takes it: relative to the workspace.
 * `/home/user/x` and `/workspace/x` become `x`; a relative path stays;
 * anything else is left for the gateway to refuse (400 bad_path).
 */
export declare function toWorkspacePath(p: string): string;
/**
 * The normalized absolute path when `p` lies outside the workspace (a
 * file of the sandbox's own file system, which `read`, `exists` and
 * `getInfo` reach read-only), else undefined.
 */
export declare function sandboxPath(p: string): string | undefined;
/** The absolute path (under /home/user) of a workspace path. */
export declare function toAbsolute(rel: string): string;
/** The URL path of a file: each segment escaped. */
export declare function filesUrlPath(p: string): string;
