package sessions

import (
	"errors"
	"fmt"

	"github.com/glassroom/glassroom/kernel"
)

// Sentinel errors. Callers (the gateway) map them to protocol status codes.
var (
	// ErrNotFound: no such session for this tenant (or it expired).
	ErrNotFound = errors.New("sessions: session not found")
	// ErrPrivatePreviews: the session's previews are private: its preview
	// host is no grant (HostGranted).
	ErrPrivatePreviews = errors.New("sessions: this session's previews are private")
	// ErrTooManySessions: the global or per-tenant session limit is reached.
	ErrTooManySessions = errors.New("sessions: session limit reached")
	// ErrQueueFull: the session's execution queue is full.
	ErrQueueFull = errors.New("sessions: execution queue full")
	// ErrInvalid: a request field is out of range or malformed.
	ErrInvalid = errors.New("sessions: invalid request")
	// ErrNoInputPending: an input reply arrived while no input was requested.
	ErrNoInputPending = errors.New("sessions: no input request pending for that execution")
	// ErrClosed: the session or manager is shutting down.
	ErrClosed = errors.New("sessions: closed")
	// ErrTooManyClients: the session has as many WebSocket clients as allowed.
	ErrTooManyClients = errors.New("sessions: too many clients attached")
	// ErrNoNetwork: the session was created without a network: it has no
	// egress proxy, and its network cannot be changed.
	ErrNoNetwork = errors.New("sessions: this session was created without a network: its network cannot be changed (create one with a network)")
	// ErrKernelDead: the kernel is dead and could not be restarted.
	ErrKernelDead = errors.New("sessions: kernel is dead")
	// ErrTooManyContexts: the session holds as many contexts as allowed
	// (Config.MaxContexts).
	ErrTooManyContexts = errors.New("sessions: context limit reached")
	// ErrPaused: a client paused the session (Session.Pause); it runs
	// nothing until resumed.
	ErrPaused = errors.New("sessions: session paused")
	// ErrNoPause: this runtime cannot freeze a sandbox.
	ErrNoPause = errors.New("sessions: this runtime cannot pause a session")
	// ErrSandboxLeft: a session's close could not remove its sandbox (the
	// kernel may still run); the manager keeps the session, counted
	// against the caps and listed as dead, and tries again.
	ErrSandboxLeft = errors.New("sessions: sandbox not removed")
	// ErrSandboxFileTooLarge: a file outside the workspace is larger than
	// a read of one may be (ReadSandboxFile).
	ErrSandboxFileTooLarge = errors.New("sessions: the sandbox file is too large to read through the gateway")
	// ErrMemorySpent: the gateway's memory budget for what sessions hold
	// (Config.MemoryBudget, the tenant's share) has no room for a read
	// now; it may be retried.
	ErrMemorySpent = errors.New("sessions: the gateway's memory budget is spent for now")
	// ErrBadKernelReply: a kernel (code the sandbox runs controls it)
	// answered with a message that is not what the protocol promises.
	ErrBadKernelReply = kernel.ErrMalformed
)

// InvalidError is a request the session layer refuses. Reason says what is
// wrong in terms the client can act on (Public); errors.Is(err,
// ErrInvalid) holds, and Err is the cause, if any.
type InvalidError struct {
	Reason string
	Err    error
}

func (e *InvalidError) Error() string { return "sessions: invalid request: " + e.Reason }

// Public is the reason, for the client.
func (e *InvalidError) Public() string { return e.Reason }

// Unwrap returns ErrInvalid and the cause, for errors.Is.
func (e *InvalidError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}
