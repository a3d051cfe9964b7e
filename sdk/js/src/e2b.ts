/**
 * `glassroom/e2b`: the names of E2B's `@e2b/code-interpreter` (and the
 * `e2b` package's errors), so that switching is one import line:
 *
 *     import { Sandbox } from 'glassroom/e2b'   // was '@e2b/code-interpreter'
 *
 * The same classes as `glassroom`'s main entry point.
 */
export * from './index.js'
import { Sandbox } from './sandbox.js'
export default Sandbox
