/**
 * Errors thrown by the SDK. Names and inheritance follow E2B's `e2b`
 * package, so code that catches `NotFoundError` or checks
 * `instanceof TimeoutError` keeps working.
 */
/** Base class of every error the SDK throws (except AuthenticationError, as in E2B). */
export class SandboxError extends Error {
    /** The gateway's `error.code` (e.g. `"not_found"`), when the gateway answered. */
    code;
    /** The HTTP status, when the gateway answered. */
    status;
    constructor(message, opts) {
        super(message, opts?.cause === undefined ? undefined : { cause: opts.cause });
        this.name = 'SandboxError';
        if (opts?.code)
            this.code = opts.code;
        if (opts?.status)
            this.status = opts.status;
    }
}
/** A timeout: a request, an execution past `timeoutMs`, or a sandbox killed during a call. */
export class TimeoutError extends SandboxError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'TimeoutError';
    }
}
/** A bad argument (HTTP 400). */
export class InvalidArgumentError extends SandboxError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'InvalidArgumentError';
    }
}
/** The workspace is full (HTTP 507). */
export class NotEnoughSpaceError extends SandboxError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'NotEnoughSpaceError';
    }
}
/** Something does not exist (HTTP 404): a sandbox, context, command or file. */
export class NotFoundError extends SandboxError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'NotFoundError';
    }
}
/** A file or directory does not exist. */
export class FileNotFoundError extends NotFoundError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'FileNotFoundError';
    }
}
/** The sandbox does not exist (any more), or belongs to another API key. */
export class SandboxNotFoundError extends NotFoundError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'SandboxNotFoundError';
    }
}
/** No API key, or a wrong one (HTTP 401). Like E2B's, not a SandboxError. */
export class AuthenticationError extends Error {
    code;
    status;
    constructor(message, opts) {
        super(message);
        this.name = 'AuthenticationError';
        if (opts?.code)
            this.code = opts.code;
        if (opts?.status)
            this.status = opts.status;
    }
}
/** Too many of something (HTTP 429): sessions, clients, queued executions, contexts, commands. */
export class RateLimitError extends SandboxError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'RateLimitError';
    }
}
/** An unknown template (E2B's name; glassroom answers 400 for it). */
export class TemplateError extends SandboxError {
    constructor(message, opts) {
        super(message, opts);
        this.name = 'TemplateError';
    }
}
/** Thrown by `commands.run` and `handle.wait()` when a command exits non-zero. */
export class CommandExitError extends SandboxError {
    result;
    constructor(result) {
        super(result.error ?? `command exited with code ${result.exitCode}`);
        this.name = 'CommandExitError';
        this.result = result;
    }
    get exitCode() {
        return this.result.exitCode;
    }
    get error() {
        return this.result.error;
    }
    get stdout() {
        return this.result.stdout;
    }
    get stderr() {
        return this.result.stderr;
    }
}
/**
 * The error for a gateway answer with HTTP status `status` and body
 * `{"error":{"code","message"}}`. `what` says what a 404 was about.
 */
export function errorFromStatus(status, code, message, what = 'other') {
    const opts = { code, status };
    const msg = message || `HTTP ${status}`;
    switch (status) {
        case 400:
            if (/unknown template/i.test(msg))
                return new TemplateError(msg, opts);
            return new InvalidArgumentError(msg, opts);
        case 401:
        case 403:
            return new AuthenticationError(msg, opts);
        case 404:
            if (code === 'file_not_found' || what === 'file')
                return new FileNotFoundError(msg, opts);
            if (code === 'not_found' && what === 'sandbox')
                return new SandboxNotFoundError(msg, opts);
            return new NotFoundError(msg, opts);
        case 413:
            return new InvalidArgumentError(msg, opts);
        case 429:
            return new RateLimitError(msg, opts);
        case 502:
        case 504:
            return new TimeoutError(msg, opts);
        case 507:
            return new NotEnoughSpaceError(msg, opts);
        default:
            return new SandboxError(`${status}: ${msg}`, opts);
    }
}
/**
 * checkUser refuses an E2B `user` other than the sandbox's own: a
 * glassroom sandbox has one unprivileged user ('user', home /home/user),
 * never root, so that code in it cannot act as root on the machine it
 * runs on.
 */
export function checkUser(user) {
    if (user === undefined || user === 'user')
        return;
    throw new InvalidArgumentError(`user=${JSON.stringify(user)}: a glassroom sandbox has no other user: commands and files are the sandbox's own unprivileged user's ('user', home /home/user), never root, so that code in it cannot act as root on the machine it runs on; leave user out`);
}
