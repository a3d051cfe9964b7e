package sessions

import "time"

// Observer is told what happens in the sessions, for metrics. Its methods
// are called from many goroutines and must not block. The zero Config
// uses a no-op one.
type Observer interface {
	// SessionCreated: a session was created, from the warm pool or cold.
	SessionCreated(pooled bool)
	// ExecutionDone: an execution ended with status after d.
	ExecutionDone(status Status, d time.Duration)
	// KernelDied: a kernel died on its own (oom: killed for memory).
	KernelDied(oom bool)
	// KernelRestarted: a kernel was restarted (requested, after a death or
	// a stubborn timeout).
	KernelRestarted()
	// Restored: at start, a stored session was "adopted", "restarted" or
	// "lost".
	Restored(outcome string)
	// Published: an event of n bytes was published to a session's clients.
	Published(n int)
	// StoreFlushed: the session store was written with the changing parts
	// of every session's record (Config.FlushInterval).
	StoreFlushed()
}

type noObserver struct{}

func (noObserver) SessionCreated(bool)                 {}
func (noObserver) ExecutionDone(Status, time.Duration) {}
func (noObserver) KernelDied(bool)                     {}
func (noObserver) KernelRestarted()                    {}
func (noObserver) Restored(string)                     {}
func (noObserver) Published(int)                       {}
func (noObserver) StoreFlushed()                       {}
