/**
 * glassroom's TypeScript SDK: sandboxed, persistent Jupyter kernels behind
 * a glassroom gateway, with the API of E2B's `@e2b/code-interpreter`.
 *
 *     import { Sandbox } from 'glassroom'
 *     const sbx = await Sandbox.create()
 *     const x = await sbx.runCode('1 + 1')   // x.text === '2'
 *     await sbx.kill()
 */
export { Sandbox, SandboxPaginator, sandboxInfo } from './sandbox.js'
export { Volume } from './volume.js'
export type {
  Context,
  RunCodeLanguage,
  RunCodeOpts,
  CreateCodeContextOpts,
  SandboxOpts,
  Lifecycle,
  SandboxConnectOpts,
  SandboxInfo,
  SandboxMetrics,
  SandboxListOpts,
  SandboxState,
  SandboxPauseOpts,
  SandboxForkOpts,
  Port,
  Preview,
} from './sandbox.js'
export { SnapshotPaginator } from './snapshot.js'
export type { SnapshotInfo, SnapshotListOpts, CreateSnapshotOpts, SnapshotContext, SnapshotMiss, RestoreReport, RestoredContext } from './snapshot.js'
export { Execution, ExecutionError, OutputMessage, Result, UserExpression, CHART_MIME, DATAFRAME_MIME } from './messaging.js'
export type { Logs, MIMEType, RawData, FileChange, NextInput } from './messaging.js'
export { ChartType, ScaleType, deserializeChart } from './charts.js'
export type {
  Chart,
  ChartTypes,
  LineChart,
  ScatterChart,
  BarChart,
  BarData,
  PieChart,
  PieData,
  BoxAndWhiskerChart,
  BoxAndWhiskerData,
  SuperChart,
  PointData,
} from './charts.js'
export { Filesystem, FileType, FilesystemEventType, WatchHandle } from './filesystem.js'
export type { EntryInfo, WriteInfo, WriteEntry, FilesystemEvent, FilesystemListOpts, FilesystemRequestOpts, WatchOpts } from './filesystem.js'
export { Commands, CommandHandle, Pty } from './commands.js'
export type { CommandStartOpts, CommandConnectOpts, CommandRequestOpts, ProcessInfo, PtyCreateOpts, PtyConnectOpts } from './commands.js'
export {
  SandboxError,
  TimeoutError,
  InvalidArgumentError,
  NotEnoughSpaceError,
  NotFoundError,
  FileNotFoundError,
  SandboxNotFoundError,
  AuthenticationError,
  RateLimitError,
  TemplateError,
  CommandExitError,
} from './errors.js'
export type { CommandResult } from './errors.js'
export { ConnectionConfig, DEFAULT_BASE_URL, DEFAULT_REQUEST_TIMEOUT_MS } from './connection.js'
export type { ConnectionOpts } from './connection.js'

import { Sandbox } from './sandbox.js'
export default Sandbox
