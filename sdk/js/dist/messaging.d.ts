import { type ChartTypes } from './charts.js';
/** The MIME types of glassroom's structured outputs. */
export declare const CHART_MIME = "application/vnd.glassroom.chart+json";
export declare const DATAFRAME_MIME = "application/vnd.glassroom.dataframe+json";
export type MIMEType = string;
/** One chunk of stdout or stderr, given to `onStdout`/`onStderr`. */
export declare class OutputMessage {
    /** The text (not necessarily one whole line). */
    readonly line: string;
    /** When it arrived, in microseconds since the epoch (E2B's unit). */
    readonly timestamp: number;
    /** True for stderr. */
    readonly error: boolean;
    constructor(
    /** The text (not necessarily one whole line). */
    line: string, 
    /** When it arrived, in microseconds since the epoch (E2B's unit). */
    timestamp: number, 
    /** True for stderr. */
    error: boolean);
    toString(): string;
}
/** The error the code raised (a Python exception, a non-zero bash status, ...). */
export declare class ExecutionError {
    /** The exception's class name (`ZeroDivisionError`). */
    name: string;
    /** Its message. */
    value: string;
    /** The traceback, lines joined with newlines (with ANSI colours, as the kernel sent it). */
    traceback: string;
    constructor(
    /** The exception's class name (`ZeroDivisionError`). */
    name: string, 
    /** Its message. */
    value: string, 
    /** The traceback, lines joined with newlines (with ANSI colours, as the kernel sent it). */
    traceback: string);
}
/** A MIME bundle as the kernel sent it (`text/plain`, `image/png` base64, ...). */
export type RawData = Record<MIMEType, unknown>;
/**
 * One rich output: the cell's value (`isMainResult`) or a display
 * (`display()`, `plt.show()`). Each MIME type has a field; `png`, `jpeg`
 * and `pdf` are base64. `data` is a pandas DataFrame's columns
 * (`{column: [values]}`), `chart` a matplotlib figure as data.
 */
export declare class Result {
    /** True for the cell's value (execute_result), false for displays. */
    readonly isMainResult: boolean;
    readonly text?: string;
    readonly html?: string;
    readonly markdown?: string;
    readonly svg?: string;
    readonly png?: string;
    readonly jpeg?: string;
    readonly pdf?: string;
    readonly latex?: string;
    readonly json?: string;
    readonly javascript?: string;
    /** A DataFrame's columns, `{name: [values]}` (from application/vnd.glassroom.dataframe+json). */
    readonly data?: Record<string, unknown>;
    /** The whole application/vnd.glassroom.dataframe+json (columns, index, dtypes, total_rows, truncated, note). */
    readonly dataframe?: Record<string, any>;
    /** A matplotlib figure as data (from application/vnd.glassroom.chart+json). */
    readonly chart?: ChartTypes;
    /** Other MIME types, by MIME type. */
    readonly extra: Record<string, unknown>;
    /** The bundle as received. */
    readonly raw: RawData;
    constructor(rawData: RawData, 
    /** True for the cell's value (execute_result), false for displays. */
    isMainResult: boolean);
    /** The formats this result has besides text (`html`, `png`, `data`, `chart`, extra MIME types...). */
    formats(): string[];
    toJSON(): Record<string, unknown>;
}
/**
 * glassroom: the kernel's answer to one of `runCode`'s `userExpressions`,
 * evaluated after the code (by the Python kernel only when the code
 * succeeded). `status` is `ok` (`data` is the value's MIME bundle, as the
 * kernel sent it) or `error` (`error` is the exception; `data` empty).
 */
export declare class UserExpression {
    readonly status: 'ok' | 'error' | string;
    /** The value's MIME bundle (`text/plain`: its repr). */
    readonly data: RawData;
    readonly metadata: Record<string, unknown>;
    readonly error?: ExecutionError | undefined;
    constructor(status: 'ok' | 'error' | string, 
    /** The value's MIME bundle (`text/plain`: its repr). */
    data?: RawData, metadata?: Record<string, unknown>, error?: ExecutionError | undefined);
    /** The value's `text/plain` (its repr: a string keeps its quotes), if any. */
    get text(): string | undefined;
    /** One entry of the gateway's `user_expressions`. */
    static fromJSON(v: any): UserExpression;
}
/** glassroom: what the code asked to put in the next cell (`%load file.py`). */
export interface NextInput {
    /** The text. */
    text: string;
    /** True: it replaces the cell that ran rather than following it. */
    replace: boolean;
}
/** A page's MIME bundle as a Result (its text as sent, quotes kept). */
export declare function pageResult(data: RawData): Result;
/** stdout and stderr of an execution, as the chunks arrived. */
export interface Logs {
    stdout: string[];
    stderr: string[];
}
/** A workspace change an execution made. */
export interface FileChange {
    path: string;
    size: number;
    change: 'created' | 'modified' | 'deleted' | string;
}
/** The outcome of `runCode`. */
export declare class Execution {
    results: Result[];
    logs: Logs;
    error?: ExecutionError | undefined;
    executionCount?: number | undefined;
    /** glassroom's status: ok, error, timeout, interrupted, died, aborted, unknown. */
    status: string;
    /** Whether the output was cut (the gateway's caps). */
    truncated: boolean;
    /** Whether the kernel's variables were lost (restart, death). */
    stateLost: boolean;
    /** Why it ended that way, when the gateway said. */
    reason?: string;
    durationMs?: number;
    /** What the execution changed in the workspace. */
    files: FileChange[];
    /**
     * glassroom: the answers to `runCode`'s `userExpressions`, by name
     * (empty when none were asked, after code that raised (the Python
     * kernel evaluates none then), or when the answers were past the
     * gateway's cap of 256 KiB: `truncated` is then set).
     */
    userExpressions: Record<string, UserExpression>;
    /** glassroom: help the code asked to show (`obj?`, `obj??`, `%pdoc`): MIME bundles as Results (`text`: IPython's pager text, with ANSI colour codes). */
    pages: Result[];
    /** glassroom: the text the code put in the next cell (`%load file.py`). */
    nextInput?: NextInput;
    /** glassroom: the code called `exit()` (the sandbox keeps running; kill it if that is what you want). */
    exitRequested: boolean;
    constructor(results?: Result[], logs?: Logs, error?: ExecutionError | undefined, executionCount?: number | undefined);
    /** The text of the cell's value, if it has one. */
    get text(): string | undefined;
    toJSON(): Record<string, unknown>;
}
