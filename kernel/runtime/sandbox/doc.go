// Package sandbox is the layer every kernel runtime shares: the contract
// between runtimes and the session layer (Spec, Limits, Sandbox), and what
// is not specific to one isolation technology.
//
//   - Spec validation, including the environment policy: which variables a
//     session may set (names that steer the interpreter, the loader or the
//     kernel's start are refused with a reason), and the one check of
//     limits (Limits.Validate: the minima a kernel runs with), which the
//     session layer, the gateway and the operator's configuration share.
//   - The optional capabilities a runtime or its sandboxes may have, each a
//     named interface (Freezer, Persistent, Adopter, OrphanFinder,
//     WorkspaceOpener, TenantRecorder, Expiring, StateDirHolder, ContextStarter,
//     CommandRunner, KernelLister) that callers find
//     with a type assertion; each runtime package checks the ones it has
//     at compile time.
//   - The kernel's launch: the base environment (pip's settings among
//     them: NoNetworkPip without a network), and the launcher that runs
//     ipykernel isolated from the workspace (python -I, no Jupyter config
//     from the session's files; the user site directory, where pip
//     installs, joins sys.path only at the first execution) with output
//     streams that flush in bounded chunks; or a kernel of its own (R,
//     Deno) started as its registry entry's bridge profile says
//     (kernels.BridgeProfile), so that nothing in the workspace steers
//     it, behind a bridge from the gateway's unix sockets (see
//     launcher.py); or a program kernel of ours (the bash and java
//     kernels, package kernels), which the launcher runs in its own
//     process once the egress forwarder is up. The python3 kernel
//     also registers the structured rich output (richoutput.py): a
//     matplotlib figure's chart JSON (ChartMIME) beside its PNG and a
//     pandas DataFrame's JSON (DataFrameMIME) beside its HTML, bounded,
//     never failing a cell.
//   - The session directory on the host (Dirs): a size-limited tmpfs
//     workspace and a tiny tmpfs for the kernel's sockets, owned by the
//     sandbox's uid, so nothing the kernel writes lands on the host outside
//     its quota.
//   - The state directory's lock (LockStateDir): one runtime, so one
//     gateway, per state directory; the kernel releases it when the
//     gateway dies, so the next one reconciles what it left. A runtime
//     takes it before it removes anything as an orphan; an operator's
//     tool asks who holds it (StateDirOwner) and takes it
//     (LockExistingStateDir) to remove what a gone gateway left.
//   - The ipc connection file (each kernel start empties the ipc directory
//     first) and the wait for the kernel's sockets.
//   - The uid claim (ClaimUIDRange, Common.ClaimUIDs): a runtime whose
//     sandboxes run as [UIDBase, UIDBase+MaxSandboxes) claims that range
//     host-wide, in Common.UIDClaimDir, and a second gateway on an
//     overlapping range refuses to start (UIDRangeInUseError, naming
//     --uid-base), so no two gateways' sessions share a host uid and its
//     RLIMIT_NPROC; the kernel releases a dead gateway's claim too.
//   - Slots (the per-sandbox uid numbers) and Base, which implements the
//     Sandbox lifecycle (restart, close, accessors) around a runtime's
//     Driver, so a runtime writes only how to start, stop and destroy its
//     kernel process.
//   - Contexts: the further kernels of a sandbox (ContextStarter), each a
//     Base of its own on an ipc directory of its own (Dirs.Context),
//     closed with the sandbox.
//   - Commands (CommandRunner): shell commands beside the kernels, run by
//     the launcher's command mode (CommandArgv: the egress forwarder, then
//     bash -lc, or bash -l on a PTY, in a process group of its own with
//     oom_score_adj 1000, above the kernels' 500, so the OOM killer takes
//     a command first; under gVisor, whose sentry the host's OOM killer
//     sees as one process, LauncherOptions.MemoryGuard has the launcher
//     kill the command itself when the sandbox's memory is nearly spent)
//     that speaks frames on its stdio; NewCommand is the
//     Go side of those frames over a runtime's transport, CommandSet the
//     running commands a sandbox's Close kills.
package sandbox
