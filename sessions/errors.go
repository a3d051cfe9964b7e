package sessions

import "errors"

// Sentinel errors. Callers (the gateway) map them to protocol status codes.
var (
	// ErrNotFound: no such session for this tenant (or it expired).
	ErrNotFound = errors.New("sessions: session not found")
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
	// ErrKernelDead: the kernel is dead and could not be restarted.
	ErrKernelDead = errors.New("sessions: kernel is dead")
)
