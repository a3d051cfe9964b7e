package sessions

import (
	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// What callers of this package (the gateway) need from the layers below
// it, named here so that they import sessions only: the session layer is
// the gateway's one door to kernels and runtimes.

// Limits are a session's resource limits (the sandbox layer's). Their
// Validate is the one check of requested limits (Create calls it too): its
// error matches ErrBadSpec and its Public text says what is wrong.
type Limits = sandbox.Limits

// Channel is a kernel channel that KernelRequest relays to.
type Channel = kernel.Channel

// The channels KernelRequest relays to.
const (
	ShellChannel   = kernel.Shell
	ControlChannel = kernel.Control
)

// MaxEnvVars is how many environment variables a session may set.
const MaxEnvVars = sandbox.MaxEnvVars

// Errors of the layers below that reach callers through this package's
// methods; errors.Is matches them.
var (
	// ErrBadSpec: the runtime refuses the session's spec (limits, env);
	// its typed error's Public text says why.
	ErrBadSpec = sandbox.ErrBadSpec
	// ErrUnavailable: the runtime could not start a kernel now.
	ErrUnavailable = sandbox.ErrUnavailable
	// ErrKernelGone: the kernel died during an exchange with it.
	ErrKernelGone = kernel.ErrDead
	// ErrReplyTooLarge: the kernel's reply to a KernelRequest was over its
	// channel's ceiling (256 KiB on control, 2 MiB on shell) and was
	// dropped unread.
	ErrReplyTooLarge = kernel.ErrCut
)

// CheckEnv reports whether env may be given to a kernel: names and values
// the sandbox's environment policy allows.
func CheckEnv(env map[string]string) error { return sandbox.CheckEnv(env) }
