/**
 * glassroom's TypeScript SDK: sandboxed, persistent Jupyter kernels behind
 * a glassroom gateway, with the API of E2B's `@e2b/code-interpreter`.
 *
 *     import { Sandbox } from 'glassroom'
 *     const sbx = await Sandbox.create()
 *     const x = await sbx.runCode('1 + 1')   // x.text === '2'
 *     await sbx.kill()
 */
export { Sandbox, SandboxPaginator, sandboxInfo } from './sandbox.js';
export { Volume } from './volume.js';
export { SnapshotPaginator } from './snapshot.js';
export { Execution, ExecutionError, OutputMessage, Result, UserExpression, CHART_MIME, DATAFRAME_MIME } from './messaging.js';
export { ChartType, ScaleType, deserializeChart } from './charts.js';
export { Filesystem, FileType, FilesystemEventType, WatchHandle } from './filesystem.js';
export { Commands, CommandHandle, Pty } from './commands.js';
export { SandboxError, TimeoutError, InvalidArgumentError, NotEnoughSpaceError, NotFoundError, FileNotFoundError, SandboxNotFoundError, AuthenticationError, RateLimitError, TemplateError, CommandExitError, } from './errors.js';
export { ConnectionConfig, DEFAULT_BASE_URL, DEFAULT_REQUEST_TIMEOUT_MS } from './connection.js';
import { Sandbox } from './sandbox.js';
export default Sandbox;
