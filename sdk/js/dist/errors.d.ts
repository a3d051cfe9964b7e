/**
 * Errors thrown by the SDK. Names and inheritance follow E2B's `e2b`
 * package, so code that catches `NotFoundError` or checks
 * `instanceof TimeoutError` keeps working.
 */
/** Base class of every error the SDK throws (except AuthenticationError, as in E2B). */
export declare class SandboxError extends Error {
    /** The gateway's `error.code` (e.g. `"not_found"`), when the gateway answered. */
    code?: string;
    /** The HTTP status, when the gateway answered. */
    status?: number;
    constructor(message?: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** A timeout: a request, an execution past `timeoutMs`, or a sandbox killed during a call. */
export declare class TimeoutError extends SandboxError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** A bad argument (HTTP 400). */
export declare class InvalidArgumentError extends SandboxError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** The workspace is full (HTTP 507). */
export declare class NotEnoughSpaceError extends SandboxError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** Something does not exist (HTTP 404): a sandbox, context, command or file. */
export declare class NotFoundError extends SandboxError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** A file or directory does not exist. */
export declare class FileNotFoundError extends NotFoundError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** The sandbox does not exist (any more), or belongs to another API key. */
export declare class SandboxNotFoundError extends NotFoundError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** No API key, or a wrong one (HTTP 401). Like E2B's, not a SandboxError. */
export declare class AuthenticationError extends Error {
    code?: string;
    status?: number;
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
    });
}
/** Too many of something (HTTP 429): sessions, clients, queued executions, contexts, commands. */
export declare class RateLimitError extends SandboxError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** An unknown template (E2B's name; glassroom answers 400 for it). */
export declare class TemplateError extends SandboxError {
    constructor(message: string, opts?: {
        code?: string;
        status?: number;
        cause?: unknown;
    });
}
/** What a finished command gives. */
export interface CommandResult {
    /** The exit status (128+n for signal n; -1 when it was killed at its timeout). */
    exitCode: number;
    /** A message when the command failed. */
    error?: string;
    stdout: string;
    stderr: string;
}
/** Thrown by `commands.run` and `handle.wait()` when a command exits non-zero. */
export declare class CommandExitError extends SandboxError implements CommandResult {
    readonly result: CommandResult;
    constructor(result: CommandResult);
    get exitCode(): number;
    get error(): string | undefined;
    get stdout(): string;
    get stderr(): string;
}
/**
 * The error for a gateway answer with HTTP status `status` and body
 * `{"error":{"code","message"}}`. `what` says what a 404 was about.
 */
export declare function errorFromStatus(status: number, code: string, message: string, what?: 'sandbox' | 'file' | 'other'): Error;
/**
 * checkUser refuses an E2B `user` other than the sandbox's own: a
 * glassroom sandbox has one unprivileged user ('user', home /home/user),
 * never root, so that code in it cannot act as root on the machine it
 * runs on.
 */
export declare function checkUser(user: string | undefined): void;
