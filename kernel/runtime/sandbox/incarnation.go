package sandbox

import (
	"sync"

	"github.com/glassroom/glassroom/kernel"
)

// Incarnation is one run of a sandboxed kernel process: how to reach it and
// how it ended. The runtime calls Exit exactly once, when the process is
// gone; the other methods are safe for concurrent use.
type Incarnation struct {
	info     kernel.ConnectionInfo
	exited   chan struct{}
	exitOnce sync.Once
	reason   string
}

// NewIncarnation returns a running incarnation reachable through info.
func NewIncarnation(info kernel.ConnectionInfo) *Incarnation {
	return &Incarnation{info: info, exited: make(chan struct{})}
}

// Connection returns how the gateway reaches this kernel process.
func (i *Incarnation) Connection() kernel.ConnectionInfo { return i.info }

// Exited is closed when the process has exited.
func (i *Incarnation) Exited() <-chan struct{} { return i.exited }

// Exit records why the process ended and closes Exited. Later calls are
// ignored.
func (i *Incarnation) Exit(reason string) {
	i.exitOnce.Do(func() {
		i.reason = reason
		close(i.exited)
	})
}

// ExitReason returns the reason given to Exit, or "" while it runs.
func (i *Incarnation) ExitReason() string {
	select {
	case <-i.exited:
		return i.reason
	default:
		return ""
	}
}

// IsDone reports whether c is closed, without waiting.
func IsDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
