// Package sessionstest is a fake runtime, sandbox and kernel for tests of
// package sessions and of the packages above it (gateway, web): a
// sessions.Manager on them runs in the fast tier (go test -short), in
// parallel, with no bubblewrap, Docker or ipykernel.
//
// A Runtime (NewRuntime) is a sandbox.Runtime whose Dial method is the
// sessions.Config.Dial that connects to its sandboxes' kernels; NewManager
// builds a Manager on a new one. Its sandboxes (Sandbox) also start
// contexts (sandbox.ContextStarter) and commands: StartCommand plays the
// command line
//
//	"out N"   writes N bytes on stdout (in 1000-byte chunks, the first
//	          byte of a 2-byte rune cut at each chunk's end), exits 0
//	"exit K"  exits K at once
//	anything else (a terminal's shell included) runs until killed
//
// after an optional first word "pid=N", the pid the sandbox tells for it
// (without it, none: as on the local runtime).
//
// The fake kernel (Kernel) does what the code it runs says:
//
//	"print:TEXT"  prints TEXT on stdout and replies ok
//	"sleep:DUR"   takes DUR (time.ParseDuration), replies ok
//	"loop"        runs until interrupted, then replies KeyboardInterrupt
//	"stubborn"    ignores interrupts; ends only when the connection ends
//	"slowobey:N"  runs, printing (its Published count rises), until its
//	              N+1th interrupt, then replies KeyboardInterrupt (a kernel
//	              slow to obey on a busy machine)
//	"spin"        ignores interrupts but keeps printing: it makes progress
//	              and never obeys
//	"usageerror:T" prints "UsageError: T" on stderr and replies an error
//	              (ename UsageError, evalue T) with no error message, as
//	              IPython does for a UsageError
//	"die"         the kernel process exits with "exit status 1"
//	"lateexit:T"  the kernel process exits, then (its reply still on the
//	              wire) prints T and replies ok, 50 ms later
//	"drain:DUR"   replies at once, then keeps printing "." for DUR
//	"side:TEXT"   sends a comm_msg (comm_id "w", data {"n": TEXT}) on its
//	              side stream, then prints TEXT: the comm message comes
//	              first, in the kernel's order
//	anything else replies ok with the code, as a JSON string, as its
//	              text/plain result
//
// except that code containing MissingDir replies a NotADirectoryError (a
// settings apply that cannot enter a missing directory). Every Execute is
// recorded (Runtime.Executions).
//
// Tests steer the fakes with the Runtime's knobs (FailRestarts,
// FailCloses, GateStarts, ...) and the Kernel's (Emit, SetSideDelay,
// SetCommInfo, ...); every knob and accessor is safe for concurrent use.
//
// It is test support, like net/http/httptest: only tests import it.
package sessionstest
