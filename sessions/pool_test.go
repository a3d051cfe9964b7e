package sessions_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// runManager runs m (expiry and pool refills) until the test ends.
func runManager(t *testing.T, m *sessions.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// started is the set of the ids of the sandboxes rt started so far.
func started(rt *sessionstest.Runtime) map[string]bool {
	set := map[string]bool{}
	for _, id := range rt.StartedIDs() {
		set[id] = true
	}
	return set
}

func waitPool(t *testing.T, m *sessions.Manager, ready int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m.Pool().Ready == ready {
			return
		}
	}
	t.Fatalf("pool %+v, want %d ready", m.Pool(), ready)
}

func TestWarmPool(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{Pool: 2})
	runManager(t, m)
	waitPool(t, m, 2)
	if len(rt.Executions()) != 0 {
		t.Fatal("a pooled kernel ran code before a session took it")
	}
	pooled := started(rt)
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !pooled[s.ID()] {
		t.Fatal("a default session did not come from the pool")
	}
	waitPool(t, m, 2) // refilled
	if e := run(t, s, "print:hi", 0); e.Stdout != "hi" {
		t.Fatalf("pooled session: %+v", e)
	}
	// Anything but the default spec starts cold.
	pooled = started(rt)
	for _, opts := range []sessions.CreateOptions{{Env: map[string]string{"A": "1"}}, {Limits: sandbox.Limits{MemoryMB: 512}}} {
		c, err := m.Create(context.Background(), "t", opts)
		if err != nil {
			t.Fatal(err)
		}
		if pooled[c.ID()] {
			t.Fatalf("a session with %+v came from the pool", opts)
		}
	}
	m.Close(context.Background())
	if n := rt.LiveSandboxes(); n != 0 {
		t.Fatalf("%d sandboxes left after Close (pooled ones included)", n)
	}
}

func TestStartsAreBounded(t *testing.T) {
	t.Parallel()
	rt := sessionstest.NewRuntime(t.TempDir())
	rt.SetStartDelay(30 * time.Millisecond)
	m, err := sessions.New(sessions.Config{Dial: rt.Dial, MaxConcurrentStarts: 3, MaxSessions: 64, MaxSessionsPerTenant: 64}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Create(context.Background(), "t", sessions.CreateOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := rt.MaxConcurrentStarts(); got > 3 || got == 0 {
		t.Fatalf("%d kernels started at once, limit 3", got)
	}
	if len(m.List("t")) != 20 {
		t.Fatal("creations beyond the limit were refused instead of queued")
	}
}

// TestWarmPoolOnTheLocalRuntime: a pooled kernel is a real, fresh kernel:
// its first execution is number 1 and its workspace is empty.
func TestWarmPoolOnTheLocalRuntime(t *testing.T) {
	m, err := sessions.New(sessions.Config{Pool: 1}, localRuntime(t), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	runManager(t, m)
	waitPool(t, m, 1)
	start := time.Now()
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := exec(t, s, "import os; print(os.listdir('.')); x = 41\nx + 1", 0)
	if e.ExecutionCount != 1 || e.Stdout != "[]\n" || string(e.Result) != `{"text/plain":"42"}` {
		t.Fatalf("first execution of a pooled kernel: %+v", e)
	}
	t.Logf("create → first result from the pool: %v", time.Since(start).Round(time.Millisecond))
	waitPool(t, m, 1)
}

// TestStartsAreSharedFairly: tenant a asks for 8 sessions at once, which
// fill the 4 start slots and queue 4 more; tenant b's one session then
// starts as soon as one of a's starts ends, before a's queued ones. One
// first-come line made b wait for all of a's.
func TestStartsAreSharedFairly(t *testing.T) {
	t.Parallel()
	rt := sessionstest.NewRuntime(t.TempDir())
	gate := rt.GateStarts()
	m, err := sessions.New(sessions.Config{Dial: rt.Dial, MaxConcurrentStarts: 4, MaxSessions: 64, MaxSessionsPerTenant: 64}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	var wg sync.WaitGroup
	defer func() { // whatever happened, every start held is let go
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for {
			select {
			case h := <-gate:
				h.Release()
			case <-done:
				return
			}
		}
	}()
	var held []sessionstest.Held
	defer func() {
		for _, h := range held {
			h.Release()
		}
	}()
	create := func(tenant string) {
		wg.Go(func() {
			if _, err := m.Create(context.Background(), tenant, sessions.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	for range 8 {
		create("a")
	}
	for range 4 {
		held = append(held, <-gate)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		st := m.Stats()
		return st.StartsActive == 4 && st.StartsWaiting == 4
	}, "a's 4 starts to hold the 4 slots, and its 4 others to wait")
	create("b")
	// b waits behind a's 4 queued creations. Let one of a's starts end.
	testkit.Eventually(t, 30*time.Second, func() bool { return m.Stats().StartsWaiting == 5 }, "a's 4 and b's 1 creation to wait for a slot")
	held[0].Release()
	held = held[1:]
	next := <-gate
	held = append(held, next)
	if next.Tenant != "b" {
		t.Fatalf("the slot a's start freed went to tenant %q, want b (a holds 3, b none)", next.Tenant)
	}
}
