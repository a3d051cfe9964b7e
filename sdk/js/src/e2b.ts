/**
 * `glassroom/e2b`: the names of E2B's `@e2b/code-interpreter` (and the
 * `e2b` package's errors), so that switching is one import line:
 *
 *     import { Sandbox } from 'glassroom/e2b'   // was '@e2b/code-interpreter'
 *
 * The same classes as `glassroom`'s main entry point, but for Sandbox:
 * a subclass with E2B's defaults.
 */
export * from './index.js'
import { Sandbox as GlassroomSandbox } from './sandbox.js'

/**
 * glassroom's Sandbox with E2B's defaults: a sandbox lives 300 s unless
 * `timeoutMs` says otherwise, and `envdApi.version` (which E2B code reads
 * to tell its daemon's version) is `'glassroom'`.
 */
export class Sandbox extends GlassroomSandbox {
  static override readonly defaultTimeoutMs: number | undefined = 300_000

  /** @internal E2B's daemon client: here only its version. */
  get envdApi(): { readonly version: string } {
    return { version: 'glassroom' }
  }

  /** E2B's name of `accessToken`. */
  get envdAccessToken(): string | undefined {
    return this.accessToken
  }
}

export default Sandbox
