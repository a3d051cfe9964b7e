package sessions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/rs/zerolog"
)

// fencedRuntime's sandboxes another gateway can take over
// (sandbox.Fenceable, sandbox.Persistent): fence() takes them.
type fencedRuntime struct {
	*sessionstest.Runtime
	sbs chan *fencedSandbox
}

func (r *fencedRuntime) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := r.Runtime.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	f := &fencedSandbox{Sandbox: sb.(*sessionstest.Sandbox), fenced: make(chan struct{}), detached: make(chan struct{})}
	r.sbs <- f
	return f, nil
}

type fencedSandbox struct {
	*sessionstest.Sandbox
	fenced   chan struct{}
	detached chan struct{}
}

func (s *fencedSandbox) Fenced() <-chan struct{} { return s.fenced }
func (s *fencedSandbox) State() sandbox.State    { return sandbox.State{ID: s.ID()} }
func (s *fencedSandbox) Detach(context.Context) error {
	close(s.detached)
	return nil
}

// TestFencedSessionIsLetGo: when another gateway takes a session's
// sandbox over (it refuses this gateway: Fenced), the session is let go
// at once: gone from this gateway's list and lookups (so requests find
// the other gateway), its sandbox detached and never closed (the kernel
// is the other gateway's), and its event subscribers told why, then
// ended.
func TestFencedSessionIsLetGo(t *testing.T) {
	rt := &fencedRuntime{Runtime: sessionstest.NewRuntime(t.TempDir()), sbs: make(chan *fencedSandbox, 1)}
	m, err := sessions.New(sessions.Config{Dial: rt.Dial}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb := <-rt.sbs
	sub := s.Subscribe(0)
	defer sub.Close()

	close(sb.fenced)
	select {
	case <-sb.detached:
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced sandbox was not detached")
	}
	if _, err := m.Get("t", s.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("the fenced session is still served here: %v", err)
	}
	if len(m.List("t")) != 0 {
		t.Fatal("the fenced session is still listed here")
	}
	told := false
	for ev := range sub.C {
		told = told || (ev.Type == sessions.EventKernel && strings.Contains(ev.Reason, "another gateway replica"))
	}
	if !told {
		t.Fatal("the session's subscribers were not told it moved")
	}
	if rt.LiveSandboxes() != 1 {
		t.Fatal("the fenced sandbox was closed: its kernel is another gateway's")
	}
}
