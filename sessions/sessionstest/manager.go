package sessionstest

import (
	"context"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
)

// NewManager returns a sessions.Manager with cfg on a new fake Runtime
// (its workspace a t.TempDir), and the Runtime. cfg.Dial is the
// Runtime's; a zero InterruptGrace is 200 ms and a zero InterruptMaxWait
// 1 s, so that the escalation of an ignored interrupt is quick. The
// Manager is closed at the test's Cleanup; the caller runs its Run, if
// the test needs the reaper or the pool. It fails the test if the
// Manager cannot be built; call it from the test's goroutine.
func NewManager(t testing.TB, cfg sessions.Config) (*sessions.Manager, *Runtime) {
	t.Helper()
	rt := NewRuntime(t.TempDir())
	cfg.Dial = rt.Dial
	if cfg.InterruptGrace == 0 {
		cfg.InterruptGrace = 200 * time.Millisecond
	}
	if cfg.InterruptMaxWait == 0 {
		cfg.InterruptMaxWait = time.Second
	}
	m, err := sessions.New(cfg, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m, rt
}
