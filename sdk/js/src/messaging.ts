import { type ChartTypes, deserializeChart } from './charts.js'

/** The MIME types of glassroom's structured outputs. */
export const CHART_MIME = 'application/vnd.glassroom.chart+json'
export const DATAFRAME_MIME = 'application/vnd.glassroom.dataframe+json'

export type MIMEType = string

/** One chunk of stdout or stderr, given to `onStdout`/`onStderr`. */
export class OutputMessage {
  constructor(
    /** The text (not necessarily one whole line). */
    public readonly line: string,
    /** When it arrived, in microseconds since the epoch (E2B's unit). */
    public readonly timestamp: number,
    /** True for stderr. */
    public readonly error: boolean
  ) {}

  toString(): string {
    return this.line
  }
}

/** The error the code raised (a Python exception, a non-zero bash status, ...). */
export class ExecutionError {
  constructor(
    /** The exception's class name (`ZeroDivisionError`). */
    public name: string,
    /** Its message. */
    public value: string,
    /** The traceback, lines joined with newlines (with ANSI colours, as the kernel sent it). */
    public traceback: string
  ) {}
}

/** A MIME bundle as the kernel sent it (`text/plain`, `image/png` base64, ...). */
export type RawData = Record<MIMEType, unknown>

const named: Record<string, string> = {
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
}

function str(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === 'string') return v
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join('')
  return JSON.stringify(v)
}

/**
 * One rich output: the cell's value (`isMainResult`) or a display
 * (`display()`, `plt.show()`). Each MIME type has a field; `png`, `jpeg`
 * and `pdf` are base64. `data` is a pandas DataFrame's columns
 * (`{column: [values]}`), `chart` a matplotlib figure as data.
 */
export class Result {
  readonly text?: string
  readonly html?: string
  readonly markdown?: string
  readonly svg?: string
  readonly png?: string
  readonly jpeg?: string
  readonly pdf?: string
  readonly latex?: string
  readonly json?: string
  readonly javascript?: string
  /** A DataFrame's columns, `{name: [values]}` (from application/vnd.glassroom.dataframe+json). */
  readonly data?: Record<string, unknown>
  /** The whole application/vnd.glassroom.dataframe+json (columns, index, dtypes, total_rows, truncated, note). */
  readonly dataframe?: Record<string, any>
  /** A matplotlib figure as data (from application/vnd.glassroom.chart+json). */
  readonly chart?: ChartTypes
  /** Other MIME types, by MIME type. */
  readonly extra: Record<string, unknown>
  /** The bundle as received. */
  readonly raw: RawData

  constructor(
    rawData: RawData,
    /** True for the cell's value (execute_result), false for displays. */
    public readonly isMainResult: boolean
  ) {
    const raw: RawData = { ...(rawData ?? {}) }
    this.raw = raw
    this.extra = {}
    const self = this as any
    for (const [mime, value] of Object.entries(raw)) {
      if (named[mime]) {
        self[named[mime]] = str(value)
      } else if (mime === DATAFRAME_MIME) {
        if (value && typeof value === 'object') {
          self.dataframe = value
          const d = (value as any).data
          if (d && typeof d === 'object') self.data = d
        }
      } else if (mime === CHART_MIME) {
        self.chart = deserializeChart(value)
      } else {
        this.extra[mime] = value
      }
    }
    // As in E2B (and glassroom's Python SDK), the text of a string value
    // has its quotes removed: Python shows 'abc', Deno "abc".
    const t = self.text
    if (typeof t === 'string' && t.length >= 2 && t[0] === t[t.length - 1] && (t[0] === "'" || t[0] === '"')) {
      self.text = t.slice(1, -1)
    }
  }

  /** The formats this result has besides text (`html`, `png`, `data`, `chart`, extra MIME types...). */
  formats(): string[] {
    const out: string[] = []
    for (const k of ['html', 'markdown', 'svg', 'png', 'jpeg', 'pdf', 'latex', 'json', 'javascript', 'data', 'chart'] as const) {
      if ((this as any)[k] !== undefined) out.push(k)
    }
    out.push(...Object.keys(this.extra))
    return out
  }

  toJSON(): Record<string, unknown> {
    const o: Record<string, unknown> = {}
    for (const k of ['text', 'html', 'markdown', 'svg', 'png', 'jpeg', 'pdf', 'latex', 'json', 'javascript', 'data', 'chart'] as const) {
      if ((this as any)[k] !== undefined) o[k] = (this as any)[k]
    }
    if (Object.keys(this.extra).length > 0) o.extra = this.extra
    return o
  }
}

/**
 * glassroom: the kernel's answer to one of `runCode`'s `userExpressions`,
 * evaluated after the code (by the Python kernel only when the code
 * succeeded). `status` is `ok` (`data` is the value's MIME bundle, as the
 * kernel sent it) or `error` (`error` is the exception; `data` empty).
 */
export class UserExpression {
  constructor(
    public readonly status: 'ok' | 'error' | string,
    /** The value's MIME bundle (`text/plain`: its repr). */
    public readonly data: RawData = {},
    public readonly metadata: Record<string, unknown> = {},
    public readonly error?: ExecutionError
  ) {}

  /** The value's `text/plain` (its repr: a string keeps its quotes), if any. */
  get text(): string | undefined {
    return str(this.data['text/plain'])
  }

  /** One entry of the gateway's `user_expressions`. */
  static fromJSON(v: any): UserExpression {
    const obj = (o: unknown): Record<string, unknown> => (o && typeof o === 'object' && !Array.isArray(o) ? { ...(o as Record<string, unknown>) } : {})
    const status = String(v?.status ?? '')
    let error: ExecutionError | undefined
    if (status !== 'ok') {
      const tb = Array.isArray(v?.traceback) ? v.traceback.map(String).join('\n') : String(v?.traceback ?? '')
      error = new ExecutionError(String(v?.ename ?? ''), String(v?.evalue ?? ''), tb)
    }
    return new UserExpression(status, obj(v?.data), obj(v?.metadata), error)
  }
}

/** glassroom: what the code asked to put in the next cell (`%load file.py`). */
export interface NextInput {
  /** The text. */
  text: string
  /** True: it replaces the cell that ran rather than following it. */
  replace: boolean
}

/** A page's MIME bundle as a Result (its text as sent, quotes kept). */
export function pageResult(data: RawData): Result {
  const r = new Result(data, false)
  ;(r as any).text = str(r.raw['text/plain'])
  return r
}

/** stdout and stderr of an execution, as the chunks arrived. */
export interface Logs {
  stdout: string[]
  stderr: string[]
}

/** A workspace change an execution made. */
export interface FileChange {
  path: string
  size: number
  change: 'created' | 'modified' | 'deleted' | string
}

/** The outcome of `runCode`. */
export class Execution {
  /** glassroom's status: ok, error, timeout, interrupted, died, aborted, unknown. */
  status = 'ok'
  /** Whether the output was cut (the gateway's caps). */
  truncated = false
  /** Whether the kernel's variables were lost (restart, death). */
  stateLost = false
  /** Why it ended that way, when the gateway said. */
  reason?: string
  durationMs?: number
  /** What the execution changed in the workspace. */
  files: FileChange[] = []
  /**
   * glassroom: the answers to `runCode`'s `userExpressions`, by name
   * (empty when none were asked, after code that raised (the Python
   * kernel evaluates none then), or when the answers were past the
   * gateway's cap of 256 KiB: `truncated` is then set).
   */
  userExpressions: Record<string, UserExpression> = {}
  /** glassroom: help the code asked to show (`obj?`, `obj??`, `%pdoc`): MIME bundles as Results (`text`: IPython's pager text, with ANSI colour codes). */
  pages: Result[] = []
  /** glassroom: the text the code put in the next cell (`%load file.py`). */
  nextInput?: NextInput
  /** glassroom: the code called `exit()` (the sandbox keeps running; kill it if that is what you want). */
  exitRequested = false

  constructor(
    public results: Result[] = [],
    public logs: Logs = { stdout: [], stderr: [] },
    public error?: ExecutionError,
    public executionCount?: number
  ) {}

  /** The text of the cell's value, if it has one. */
  get text(): string | undefined {
    for (const r of this.results) if (r.isMainResult) return r.text
    return undefined
  }

  toJSON(): Record<string, unknown> {
    return { results: this.results, logs: this.logs, error: this.error }
  }
}
