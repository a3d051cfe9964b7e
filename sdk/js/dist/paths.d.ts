/** Where the workspace is inside the sandbox (E2B's home directory). */
export declare const HOME = "/home/user";
/**
 * A path as the gateway's file API takes it: relative to the workspace.
 * `/home/user/x` and `/workspace/x` become `x`; a relative path stays;
 * anything else is left for the gateway to refuse (400 bad_path).
 */
export declare function toWorkspacePath(p: string): string;
/** The absolute path (under /home/user) of a workspace path. */
export declare function toAbsolute(rel: string): string;
/** The URL path of a file: each segment escaped. */
export declare function filesUrlPath(p: string): string;
