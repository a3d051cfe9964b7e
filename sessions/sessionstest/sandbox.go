package sessionstest

import (
	"context"
	"errors"
	"sync"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Sandbox is a fake sandbox (sandbox.Sandbox, sandbox.ContextStarter and
// sandbox.CommandRunner) of a Runtime: one fake kernel process, which
// Restart replaces. Tests may embed it to add a capability (freezing,
// fencing, ...). Safe for concurrent use.
type Sandbox struct {
	id string
	rt *Runtime

	mu       sync.Mutex
	inc      *sandbox.Incarnation
	closed   bool
	children []*Sandbox // its contexts' sandboxes (StartContext)
}

func (s *Sandbox) current() *sandbox.Incarnation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inc
}

// ID implements sandbox.Sandbox.
func (s *Sandbox) ID() string { return s.id }

// Connection implements sandbox.Sandbox: its current kernel process's.
func (s *Sandbox) Connection() kernel.ConnectionInfo { return s.current().Connection() }

// Limits implements sandbox.Sandbox.
func (s *Sandbox) Limits() sandbox.Limits { return sandbox.Limits{MemoryMB: 1} }

// Workspace implements sandbox.Sandbox: the Runtime's directory.
func (s *Sandbox) Workspace() string { return s.rt.dir }

// Exited implements sandbox.Sandbox: its current kernel process's.
func (s *Sandbox) Exited() <-chan struct{} { return s.current().Exited() }

// ExitReason implements sandbox.Sandbox.
func (s *Sandbox) ExitReason() string { return s.current().ExitReason() }

// Restart implements sandbox.Sandbox: it kills the kernel process and
// starts another, unless the Runtime fails restarts (FailRestarts).
func (s *Sandbox) Restart(context.Context) error {
	s.current().Exit("killed for restart")
	if s.rt.failRestart.Load() {
		return errors.New("fake: restart failed")
	}
	inc := s.rt.incarnation()
	s.mu.Lock()
	s.inc = inc
	s.mu.Unlock()
	return nil
}

// Close implements sandbox.Sandbox: it ends its kernel process and its
// contexts' (FailCloses and PanicNextClose make it fail).
func (s *Sandbox) Close(context.Context) error {
	if s.rt.closePanics.CompareAndSwap(true, false) {
		panic("fake: sandbox close panicked")
	}
	if s.rt.closeFails.Add(-1) >= 0 {
		return errors.New("fake: the engine did not answer")
	}
	s.rt.closeFails.Store(0)
	s.mu.Lock()
	children := s.children
	s.children = nil
	s.mu.Unlock()
	for _, c := range children {
		_ = c.Close(context.Background())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.inc.Exit("closed")
		s.rt.mu.Lock()
		s.rt.live--
		s.rt.mu.Unlock()
	}
	return nil
}

// StartContext implements sandbox.ContextStarter: another fake kernel
// process, which the sandbox's Close ends too.
func (s *Sandbox) StartContext(_ context.Context, _ sandbox.ContextSpec) (sandbox.Sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sandbox.ErrClosed
	}
	child := &Sandbox{id: s.id, rt: s.rt, inc: s.rt.incarnation()}
	s.children = append(s.children, child)
	s.rt.mu.Lock()
	s.rt.live++
	s.rt.mu.Unlock()
	return child, nil
}
