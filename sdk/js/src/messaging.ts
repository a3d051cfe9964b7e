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
