package sessions_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/rs/zerolog"
)

// expiringRuntime is the fake runtime whose sandboxes outlive the gateway
// and end themselves (sandbox.Persistent and sandbox.Expiring): each
// records the ends it is told and when it was detached.
type expiringRuntime struct {
	*sessionstest.Runtime
	mu  sync.Mutex
	sbs []*expiringSandbox
}

func (r *expiringRuntime) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	sb, err := r.Runtime.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	e := &expiringSandbox{Sandbox: sb.(*sessionstest.Sandbox), detached: -1}
	r.mu.Lock()
	r.sbs = append(r.sbs, e)
	r.mu.Unlock()
	return e, nil
}

type expiringSandbox struct {
	*sessionstest.Sandbox
	mu       sync.Mutex
	ends     []time.Time
	detached int // len(ends) when Detach was called, or -1
}

func (s *expiringSandbox) SetEnd(end time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends = append(s.ends, end)
	return nil
}

func (s *expiringSandbox) State() sandbox.State { return sandbox.State{ID: s.ID()} }

func (s *expiringSandbox) Detach(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detached = len(s.ends)
	return nil
}

func (s *expiringSandbox) told() (ends []time.Time, detachedAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.ends...), s.detached
}

// TestSandboxToldItsEnd: a sandbox that ends itself once no gateway holds
// it (sandbox.Expiring) is told its session's end when the session is
// created and when its lifetime changes; and, just before it is
// detached, the time after which no gateway would restore the session:
// its idle expiry, when that comes before its lifetime's end.
func TestSandboxToldItsEnd(t *testing.T) {
	rt := &expiringRuntime{Runtime: sessionstest.NewRuntime(t.TempDir())}
	m, err := sessions.New(sessions.Config{Dial: rt.Dial}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	near := func(got, want time.Time) bool { d := got.Sub(want); return d > -5*time.Second && d < 5*time.Second }

	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{Lifetime: time.Hour, IdleTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sb := rt.sbs[0]
	if ends, _ := sb.told(); len(ends) != 1 || !ends[0].Equal(s.Info().EndAt) || !near(ends[0], time.Now().Add(time.Hour)) {
		t.Fatalf("at creation the sandbox was told %v, want the session's end %v", ends, s.Info().EndAt)
	}
	if err := s.SetLifetime(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if ends, _ := sb.told(); len(ends) != 2 || !ends[1].Equal(s.Info().EndAt) || !near(ends[1], time.Now().Add(2*time.Hour)) {
		t.Fatalf("after SetLifetime the sandbox was told %v, want the new end %v", ends, s.Info().EndAt)
	}
	lastActive := s.LastActivity()
	if err := m.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	ends, detachedAfter := sb.told()
	if len(ends) != 3 || detachedAfter != 3 || !ends[2].Equal(lastActive.Add(10*time.Minute)) {
		t.Fatalf("at detach the sandbox was told %v (detached after %d), want its idle expiry %v told before Detach",
			ends, detachedAfter, lastActive.Add(10*time.Minute))
	}
}
