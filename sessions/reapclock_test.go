package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
)

// TestDeadlinesEndSessionsOnTime (short tier): with a reaper that ticks
// once an hour, a session still ends at its lifetime's end, at a
// lifetime shortened later (E2B's set_timeout) and at its idle expiry:
// the reaper wakes at the first deadline, not at its next tick.
func TestDeadlinesEndSessionsOnTime(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{ReapInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = m.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	ended := func(name string, s *sessions.Session) {
		t.Helper()
		sub := s.Subscribe(0)
		defer sub.Close()
		guard := time.After(30 * time.Second) // a bound on a failure, far from the hour's tick
		for {
			select {
			case _, ok := <-sub.C:
				if !ok {
					if _, err := m.Get("t", s.ID()); err == nil {
						t.Fatalf("%s: its events ended, the session is still here", name)
					}
					return
				}
			case <-guard:
				t.Fatalf("%s: the session did not end at its deadline", name)
			}
		}
	}

	short, err := m.Create(context.Background(), "t", sessions.CreateOptions{Lifetime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ended("a lifetime given at creation", short)

	shortened := fakeSession(t, m)
	if err := shortened.SetLifetime(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ended("a lifetime shortened", shortened)

	idle := fakeSession(t, m)
	if err := idle.SetIdleTimeout(time.Second); err != nil {
		t.Fatal(err)
	}
	ended("an idle timeout", idle)
}
