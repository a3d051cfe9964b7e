import { deserializeChart } from './charts.js';
/** The MIME types of glassroom's structured outputs. */
export const CHART_MIME = 'application/vnd.glassroom.chart+json';
export const DATAFRAME_MIME = 'application/vnd.glassroom.dataframe+json';
/** One chunk of stdout or stderr, given to `onStdout`/`onStderr`. */
export class OutputMessage {
    line;
    timestamp;
    error;
    constructor(
    /** The text (not necessarily one whole line). */
    line, 
    /** When it arrived, in microseconds since the epoch (E2B's unit). */
    timestamp, 
    /** True for stderr. */
    error) {
        this.line = line;
        this.timestamp = timestamp;
        this.error = error;
    }
    toString() {
        return this.line;
    }
}
/** The error the code raised (a Python exception, a non-zero bash status, ...). */
export class ExecutionError {
    name;
    value;
    traceback;
    constructor(
    /** The exception's class name (`ZeroDivisionError`). */
    name, 
    /** Its message. */
    value, 
    /** The traceback, lines joined with newlines (with ANSI colours, as the kernel sent it). */
    traceback) {
        this.name = name;
        this.value = value;
        this.traceback = traceback;
    }
}
const named = {
    'text/plain': 'text',
    'text/html': 'html',
    'text/markdown': 'markdown',
    'image/svg+xml': 'svg',
    'image/png': 'png',
    'image/jpeg': 'jpeg',
    'application/pdf': 'pdf',
    'text/latex': 'latex',
    'application/json': 'json',
    'application/javascript': 'javascript',
};
function str(v) {
    if (v === undefined || v === null)
        return undefined;
    if (typeof v === 'string')
        return v;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string'))
        return v.join('');
    return JSON.stringify(v);
}
/**
 * One rich output: the cell's value (`isMainResult`) or a display
 * (`display()`, `plt.show()`). Each MIME type has a field; `png`, `jpeg`
 * and `pdf` are base64. `data` is a pandas DataFrame's columns
 * (`{column: [values]}`), `chart` a matplotlib figure as data.
 */
export class Result {
    isMainResult;
    text;
    html;
    markdown;
    svg;
    png;
    jpeg;
    pdf;
    latex;
    json;
    javascript;
    /** A DataFrame's columns, `{name: [values]}` (from application/vnd.glassroom.dataframe+json). */
    data;
    /** The whole application/vnd.glassroom.dataframe+json (columns, index, dtypes, total_rows, truncated, note). */
    dataframe;
    /** A matplotlib figure as data (from application/vnd.glassroom.chart+json). */
    chart;
    /** Other MIME types, by MIME type. */
    extra;
    /** The bundle as received. */
    raw;
    constructor(rawData, 
    /** True for the cell's value (execute_result), false for displays. */
    isMainResult) {
        this.isMainResult = isMainResult;
        const raw = { ...(rawData ?? {}) };
        this.raw = raw;
        this.extra = {};
        const self = this;
        for (const [mime, value] of Object.entries(raw)) {
            if (named[mime]) {
                self[named[mime]] = str(value);
            }
            else if (mime === DATAFRAME_MIME) {
                if (value && typeof value === 'object') {
                    self.dataframe = value;
                    const d = value.data;
                    if (d && typeof d === 'object')
                        self.data = d;
                }
            }
            else if (mime === CHART_MIME) {
                self.chart = deserializeChart(value);
            }
            else {
                this.extra[mime] = value;
            }
        }
        // As in E2B (and glassroom's Python SDK), the text of a string value
        // has its quotes removed: Python shows 'abc', Deno "abc".
        const t = self.text;
        if (typeof t === 'string' && t.length >= 2 && t[0] === t[t.length - 1] && (t[0] === "'" || t[0] === '"')) {
            self.text = t.slice(1, -1);
        }
    }
    /** The formats this result has besides text (`html`, `png`, `data`, `chart`, extra MIME types...). */
    formats() {
        const out = [];
        for (const k of ['html', 'markdown', 'svg', 'png', 'jpeg', 'pdf', 'latex', 'json', 'javascript', 'data', 'chart']) {
            if (this[k] !== undefined)
                out.push(k);
        }
        out.push(...Object.keys(this.extra));
        return out;
    }
    toJSON() {
        const o = {};
        for (const k of ['text', 'html', 'markdown', 'svg', 'png', 'jpeg', 'pdf', 'latex', 'json', 'javascript', 'data', 'chart']) {
            if (this[k] !== undefined)
                o[k] = this[k];
        }
        if (Object.keys(this.extra).length > 0)
            o.extra = this.extra;
        return o;
    }
}
/**
 * glassroom: the kernel's answer to one of `runCode`'s `userExpressions`,
 * evaluated after the code (by the Python kernel only when the code
 * succeeded). `status` is `ok` (`data` is the value's MIME bundle, as the
 * kernel sent it) or `error` (`error` is the exception; `data` empty).
 */
export class UserExpression {
    status;
    data;
    metadata;
    error;
    constructor(status, 
    /** The value's MIME bundle (`text/plain`: its repr). */
    data = {}, metadata = {}, error) {
        this.status = status;
        this.data = data;
        this.metadata = metadata;
        this.error = error;
    }
    /** The value's `text/plain` (its repr: a string keeps its quotes), if any. */
    get text() {
        return str(this.data['text/plain']);
    }
    /** One entry of the gateway's `user_expressions`. */
    static fromJSON(v) {
        const obj = (o) => (o && typeof o === 'object' && !Array.isArray(o) ? { ...o } : {});
        const status = String(v?.status ?? '');
        let error;
        if (status !== 'ok') {
            const tb = Array.isArray(v?.traceback) ? v.traceback.map(String).join('\n') : String(v?.traceback ?? '');
            error = new ExecutionError(String(v?.ename ?? ''), String(v?.evalue ?? ''), tb);
        }
        return new UserExpression(status, obj(v?.data), obj(v?.metadata), error);
    }
}
/** A page's MIME bundle as a Result (its text as sent, quotes kept). */
export function pageResult(data) {
    const r = new Result(data, false);
    r.text = str(r.raw['text/plain']);
    return r;
}
/** The outcome of `runCode`. */
export class Execution {
    results;
    logs;
    error;
    executionCount;
    /** glassroom's status: ok, error, timeout, interrupted, died, aborted, unknown. */
    status = 'ok';
    /** Whether the output was cut (the gateway's caps). */
    truncated = false;
    /** Whether the kernel's variables were lost (restart, death). */
    stateLost = false;
    /** Why it ended that way, when the gateway said. */
    reason;
    durationMs;
    /** What the execution changed in the workspace. */
    files = [];
    /**
     * glassroom: the answers to `runCode`'s `userExpressions`, by name
     * (empty when none were asked, after code that raised (the Python
     * kernel evaluates none then), or when the answers were past the
     * gateway's cap of 256 KiB: `truncated` is then set).
     */
    userExpressions = {};
    /** glassroom: help the code asked to show (`obj?`, `obj??`, `%pdoc`): MIME bundles as Results (`text`: IPython's pager text, with ANSI colour codes). */
    pages = [];
    /** glassroom: the text the code put in the next cell (`%load file.py`). */
    nextInput;
    /** glassroom: the code called `exit()` (the sandbox keeps running; kill it if that is what you want). */
    exitRequested = false;
    constructor(results = [], logs = { stdout: [], stderr: [] }, error, executionCount) {
        this.results = results;
        this.logs = logs;
        this.error = error;
        this.executionCount = executionCount;
    }
    /** The text of the cell's value, if it has one. */
    get text() {
        for (const r of this.results)
            if (r.isMainResult)
                return r.text;
        return undefined;
    }
    toJSON() {
        return { results: this.results, logs: this.logs, error: this.error };
    }
}
