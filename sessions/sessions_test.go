package sessions_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newLocal is a local runtime on dir, its sandboxes on uids no other test
// holds (testkit.UIDBase); it is closed when the test ends.
func newLocal(t testing.TB, dir string) (*local.Runtime, error) {
	return newLocalWith(t, dir, 0)
}

func localRuntime(t testing.TB) *local.Runtime {
	t.Helper()
	testkit.RealThing(t, "bubblewrap and ipykernel")
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	rt, err := newLocal(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func newManager(t *testing.T, cfg sessions.Config) *sessions.Manager {
	t.Helper()
	testkit.RealThing(t, "bubblewrap and ipykernel")
	m, err := sessions.New(cfg, localRuntime(t), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		m.Close(context.Background())
	})
	return m
}

func create(t *testing.T, m *sessions.Manager, tenant string) *sessions.Session {
	t.Helper()
	s, err := m.Create(context.Background(), tenant, sessions.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return s
}

// exec runs code with the given execution timeout; a real kernel must
// answer within 60 s.
func exec(t *testing.T, s *sessions.Session, code string, timeout time.Duration) *sessions.Execution {
	t.Helper()
	return execWithin(t, s, code, timeout, 60*time.Second)
}

// execWithin runs code and fails t if no answer comes within limit.
func execWithin(t *testing.T, s *sessions.Session, code string, timeout, limit time.Duration) *sessions.Execution {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	e, err := s.First().Execute(ctx, sessions.ExecRequest{Code: code, Timeout: timeout})
	if err != nil {
		t.Fatalf("execute %q: %v", code, err)
	}
	return e
}

func TestStatePersistsAndSessionsAreSeparate(t *testing.T) {
	m := newManager(t, sessions.Config{})
	a, b := create(t, m, "t1"), create(t, m, "t1")
	exec(t, a, "x = 41", 0)
	e := exec(t, a, "x + 1", 0)
	if e.Status != "ok" || string(e.Result) != `{"text/plain":"42"}` || e.ExecutionCount != 2 {
		t.Fatalf("x + 1: %+v result %s", e, e.Result)
	}
	if e := exec(t, b, "x", 0); e.Status != "error" || e.Error == nil || e.Error.Name != "NameError" {
		t.Fatalf("session b saw x: %+v", e)
	}
}

// TestUsageErrorFillsTheError: IPython answers a missing magic with a
// UsageError on stderr and an error reply, no error message; the
// execution's error comes from the reply.
func TestUsageErrorFillsTheError(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	e := exec(t, s, "%lprun -f print print(1)", 0)
	if e.Status != "error" || e.Error == nil || e.Error.Name != "UsageError" || !strings.Contains(e.Error.Value, "lprun") {
		t.Fatalf("a UsageError: %+v error %+v", e, e.Error)
	}
}

func TestTimeoutInterruptsAndKeepsState(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	exec(t, s, "kept = 1", 0)
	e := exec(t, s, "import time\nwhile True: time.sleep(0.05)", 500*time.Millisecond)
	if e.Status != "timeout" || e.StateLost {
		t.Fatalf("want timeout with state kept, got %+v", e)
	}
	if e := exec(t, s, "kept", 0); e.Status != "ok" {
		t.Fatalf("state lost after interruptible timeout: %+v", e)
	}
}

func TestTimeoutRestartsStubbornKernel(t *testing.T) {
	m := newManager(t, sessions.Config{InterruptGrace: 500 * time.Millisecond})
	s := create(t, m, "t")
	exec(t, s, "kept = 1", 0)
	code := "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass"
	e := exec(t, s, code, 500*time.Millisecond)
	if e.Status != "timeout" || !e.StateLost {
		t.Fatalf("want timeout with state lost, got %+v", e)
	}
	if e := exec(t, s, "kept", 0); e.Status != "error" || e.Error.Name != "NameError" {
		t.Fatalf("kernel not restarted: %+v", e)
	}
	if e := exec(t, s, "1 + 1", 0); e.Status != "ok" {
		t.Fatalf("session unusable after restart: %+v", e)
	}
}

// TestTimeoutKeepsASlowKernel: a timed-out kernel that does not obey the
// first interrupt but keeps computing (as one starved by a busy machine
// does: its CPU time rises) is interrupted again instead of restarted, and
// keeps its variables. This one's SIGINT handler lets two interrupts pass
// (one interrupt may deliver SIGINT twice: those within 0.2 s count once)
// in a busy loop that prints nothing: only its CPU time shows progress.
func TestTimeoutKeepsASlowKernel(t *testing.T) {
	m := newManager(t, sessions.Config{InterruptGrace: 500 * time.Millisecond})
	s := create(t, m, "t")
	exec(t, s, "kept = 1", 0)
	code := `import signal, time
n, last = 0, 0.0
def obey_third(signum, frame):
    global n, last
    if time.monotonic() - last > 0.2:
        n, last = n + 1, time.monotonic()
    if n >= 3:
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, obey_third)
while True:
    pass`
	e := exec(t, s, code, 500*time.Millisecond)
	if e.Status != "timeout" || e.StateLost || !strings.Contains(e.Reason, "interrupts") {
		t.Fatalf("want a timeout with the variables kept after several interrupts, got %+v", e)
	}
	// One more interrupt may land while the kernel formats the traceback
	// (it used CPU time: progress): n can be 4.
	if e := exec(t, s, "print(kept, n >= 3)", 0); e.Status != "ok" || strings.TrimSpace(e.Stdout) != "1 True" {
		t.Fatalf("variables lost: %+v", e)
	}
}

func TestOutputFloodIsTruncated(t *testing.T) {
	m := newManager(t, sessions.Config{MaxStreamBytes: 64 << 10})
	s := create(t, m, "t")
	e := exec(t, s, "for i in range(2000): print('x' * 1000)", 0)
	if !e.Truncated || len(e.Stdout) > 64<<10 || len(e.Stdout) < 60<<10 {
		t.Fatalf("truncated=%v stdout=%d bytes", e.Truncated, len(e.Stdout))
	}
}

func TestQueueRunsInOrder(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.First().Submit(sessions.ExecRequest{ID: id, Code: "import time; time.sleep(0.1); print('" + id + "')"}); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	timeout := time.After(30 * time.Second)
	for len(order) < 3 {
		select {
		case ev := <-sub.C:
			if ev.Type == "stream" {
				order = append(order, ev.ID+"="+strings.TrimSpace(ev.Text))
			}
		case <-timeout:
			t.Fatalf("events so far: %v", order)
		}
	}
	if strings.Join(order, ",") != "a=a,b=b,c=c" {
		t.Fatalf("order %v", order)
	}
}

func TestInterruptAndInput(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	s.First().Submit(sessions.ExecRequest{ID: "in", Code: "print('hi', input('who?'))", AllowStdin: true})
	s.First().Submit(sessions.ExecRequest{ID: "loop", Code: "while True: pass"})
	deadline := time.After(30 * time.Second)
	var statuses []string
	for len(statuses) < 2 {
		select {
		case ev := <-sub.C:
			switch {
			case ev.Type == "input_request":
				if err := s.First().Input("wrong-id", "x"); !errors.Is(err, sessions.ErrNoInputPending) {
					t.Errorf("input for wrong id: %v", err)
				}
				if err := s.First().Input("in", "ada"); err != nil {
					t.Error(err)
				}
			case ev.Type == "stream" && ev.ID == "in" && !strings.Contains(ev.Text, "hi ada"):
				t.Errorf("echo %q", ev.Text)
			case ev.Type == "kernel" && ev.State == "busy" && len(statuses) == 1:
				time.Sleep(200 * time.Millisecond)
				if err := s.First().Interrupt(context.Background()); err != nil {
					t.Error(err)
				}
			case ev.Type == "done":
				statuses = append(statuses, ev.ID+"="+string(ev.Status))
			}
		case <-deadline:
			t.Fatalf("statuses %v", statuses)
		}
	}
	if strings.Join(statuses, ",") != "in=ok,loop=interrupted" {
		t.Fatalf("statuses %v", statuses)
	}
}

func TestKernelDeathIsReportedAndRecovered(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	e := exec(t, s, "import os; os._exit(1)", 0)
	if e.Status != "died" || !e.StateLost || !strings.Contains(e.Reason, "exit status 1") {
		t.Fatalf("want died, got %+v", e)
	}
	if e := exec(t, s, "1 + 1", 0); e.Status != "ok" {
		t.Fatalf("not recovered: %+v", e)
	}
}

func TestRestartKeepsIDLosesVariables(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	exec(t, s, "v = 1", 0)
	if err := s.First().Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := exec(t, s, "v", 0); e.Status != "error" {
		t.Fatalf("variables survived restart: %+v", e)
	}
	if _, err := m.Get("t", s.ID()); err != nil {
		t.Fatal(err)
	}
}

func TestIdleExpiry(t *testing.T) {
	m := newManager(t, sessions.Config{ReapInterval: 100 * time.Millisecond})
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(0)
	defer sub.Close()
	var last sessions.Event
	timeout := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-sub.C:
			if ok {
				last = ev
			}
			open = ok
		case <-timeout:
			t.Fatal("session did not expire")
		}
	}
	if last.Type != "kernel" || last.State != "dead" || last.Reason != "idle timeout" {
		t.Fatalf("last event %+v", last)
	}
	if _, err := m.Get("t", s.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("expired session still found: %v", err)
	}
}

func TestLimitsAndTenants(t *testing.T) {
	m := newManager(t, sessions.Config{MaxSessions: 3, MaxSessionsPerTenant: 2})
	a := create(t, m, "a")
	create(t, m, "a")
	if _, err := m.Create(context.Background(), "a", sessions.CreateOptions{}); !errors.Is(err, sessions.ErrTooManySessions) {
		t.Fatalf("per-tenant limit: %v", err)
	}
	create(t, m, "b")
	if _, err := m.Create(context.Background(), "c", sessions.CreateOptions{}); !errors.Is(err, sessions.ErrTooManySessions) {
		t.Fatalf("total limit: %v", err)
	}
	if _, err := m.Get("b", a.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("tenant b sees a's session: %v", err)
	}
	if got := m.List("a"); len(got) != 2 {
		t.Fatalf("list: %v", got)
	}
	if err := m.Delete(context.Background(), "b", a.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("tenant b deleted a's session: %v", err)
	}
	if _, err := m.Create(context.Background(), "a", sessions.CreateOptions{Env: map[string]string{"BAD NAME": "x"}}); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("bad env: %v", err)
	}
	if _, err := a.First().Execute(context.Background(), sessions.ExecRequest{Code: "1", Timeout: time.Hour}); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("timeout over max: %v", err)
	}
}

func TestReplayAfterReconnect(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	first := s.Subscribe(s.LastSeq())
	s.First().Submit(sessions.ExecRequest{ID: "long", Code: "import time\nfor i in range(5):\n    print(i, flush=True); time.sleep(0.1)"})
	var seen int64
	for ev := range first.C {
		if ev.Type == "stream" {
			seen = ev.Seq
			break
		}
	}
	first.Close() // the client disconnects after the first output
	time.Sleep(700 * time.Millisecond)
	again := s.Subscribe(seen)
	defer again.Close()
	var got []string
	for ev := range again.C {
		if ev.Seq <= seen {
			t.Fatalf("replayed an event the client had: %d <= %d", ev.Seq, seen)
		}
		if ev.Type == "stream" {
			got = append(got, strings.TrimSpace(ev.Text))
		}
		if ev.Type == "done" {
			break
		}
	}
	if strings.Join(got, "") != "1234" {
		t.Fatalf("replayed %v", got)
	}
}

// A fake runtime that cannot start kernels.
type brokenRuntime struct{}

func (brokenRuntime) Name() string { return "broken" }
func (brokenRuntime) Start(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	return nil, sandbox.ErrUnavailable
}

func TestRuntimeFailureIsUnavailable(t *testing.T) {
	m, err := sessions.New(sessions.Config{}, brokenRuntime{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if _, err := m.Create(context.Background(), "t", sessions.CreateOptions{}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
	if _, err := m.Create(context.Background(), "t", sessions.CreateOptions{}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("failed creates leaked reservations: %v", err)
	}
}

func TestHostileOutputShapesAreBounded(t *testing.T) {
	m := newManager(t, sessions.Config{MaxEvents: 500, MaxRichBytes: 1 << 20})
	s := create(t, m, "t")
	// Huge display ids, many tiny outputs, a huge prompt: all bounded.
	e := exec(t, s, `from IPython.display import display
for i in range(5):
    display({"text/plain": "x"}, raw=True, display_id="d" * (1 << 20))
for i in range(3000):
    print(i, flush=True)`, 0)
	if !e.Truncated || len(e.Outputs) > 500 {
		t.Fatalf("truncated=%v outputs=%d", e.Truncated, len(e.Outputs))
	}
	for _, o := range e.Outputs {
		if len(o.DisplayID) > 256 {
			t.Fatalf("display id of %d bytes kept", len(o.DisplayID))
		}
	}
	if e := exec(t, s, "1 + 1", 0); e.Status != "ok" || e.Truncated {
		t.Fatalf("next execution: %+v", e)
	}
}

func TestClientsPerSessionAreCapped(t *testing.T) {
	m := newManager(t, sessions.Config{MaxClients: 2})
	s := create(t, m, "t")
	r1, err := s.Attach()
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := s.Attach()
	if _, err := s.Attach(); !errors.Is(err, sessions.ErrTooManyClients) {
		t.Fatalf("third client: %v", err)
	}
	r1()
	r1() // idempotent
	r3, err := s.Attach()
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	r2()
	r3()
}

type (
	kernelInfo   = kernel.ConnectionInfo
	kernelConfig = kernel.Config
)

// newLocalWith is newLocal with slots sandboxes at most (0: the default).
func newLocalWith(t testing.TB, dir string, slots int) (*local.Runtime, error) {
	rt, err := local.New(local.Config{Common: sandbox.Common{StateDir: dir, UIDBase: testkit.UIDBase(t), MaxSandboxes: slots}}, zerolog.Nop())
	if err == nil {
		t.Cleanup(func() { rt.Close() }) // after the managers' cleanups, registered later
	}
	return rt, err
}

func realDial(ctx context.Context, info kernel.ConnectionInfo, cfg kernel.Config, log zerolog.Logger) (sessions.KernelConn, error) {
	c, err := kernel.Dial(ctx, info, cfg, log)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// TestCloseThatLeavesTheSandbox: a close whose sandbox cannot be removed
// (the engine does not answer; a bug panics) finishes its other steps,
// says so, and keeps the session listed (dead) and counted against the
// tenant's cap until the reaper has removed the sandbox; a panic in a
// close never reaches the caller's goroutine.
func TestCloseThatLeavesTheSandbox(t *testing.T) {
	for _, how := range []string{"fails", "panics"} {
		t.Run(how, func(t *testing.T) {
			m, rt := fakeManager(t, sessions.Config{MaxSessionsPerTenant: 1, MaxSessions: 4, ReapInterval: 20 * time.Millisecond})
			s := fakeSession(t, m)
			if how == "fails" {
				rt.FailCloses(3)
			} else {
				rt.PanicNextClose()
			}
			err := m.Delete(context.Background(), "t", s.ID())
			if !errors.Is(err, sessions.ErrSandboxLeft) {
				t.Fatalf("delete whose sandbox stays: %v", err)
			}
			if list := m.List("t"); len(list) != 1 || list[0].ID != s.ID() || list[0].State != sessions.StateDead {
				t.Fatalf("the session whose sandbox is left is not listed dead: %+v", list)
			}
			if _, err := m.Create(context.Background(), "t", sessions.CreateOptions{}); !errors.Is(err, sessions.ErrTooManySessions) {
				t.Fatalf("a left sandbox must count against the tenant's cap: %v", err)
			}
			if rt.LiveSandboxes() != 1 {
				t.Fatalf("%d sandboxes live", rt.LiveSandboxes())
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan struct{})
			go func() { m.Run(ctx); close(ran) }()
			defer func() { cancel(); <-ran }()
			testkit.Eventually(t, 10*time.Second, func() bool { return len(m.List("t")) == 0 && rt.LiveSandboxes() == 0 },
				"the reaper to remove the left sandbox and forget the session")
			if _, err := m.Create(context.Background(), "t", sessions.CreateOptions{}); err != nil {
				t.Fatalf("create once the sandbox is gone: %v", err)
			}
		})
	}
}

// TestTerminalsWhileTheLifetimeEnds: on a real sandbox, terminals open
// and close in a loop while the session's lifetime runs out: the reaper's
// close meets terminals that are starting (it once panicked on one and
// took the gateway process down), and every shell ends with the session.
func TestTerminalsWhileTheLifetimeEnds(t *testing.T) {
	m := newManager(t, sessions.Config{ReapInterval: 50 * time.Millisecond})
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{Lifetime: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	opened := make([]int, 3)
	for w := range opened {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				term, err := s.Commands().Terminal(context.Background(), 80, 24, false)
				if err != nil {
					if !errors.Is(err, sessions.ErrClosed) && !errors.Is(err, sessions.ErrTooManyCommands) {
						t.Errorf("terminal: %v", err)
					}
					if errors.Is(err, sessions.ErrClosed) {
						return
					}
					continue
				}
				opened[w]++
				term.Close()
			}
		}()
	}
	wg.Wait()
	if _, err := m.Get("t", s.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("the session outlived its lifetime: %v", err)
	}
	if opened[0]+opened[1]+opened[2] == 0 {
		t.Fatal("no terminal opened before the session ended")
	}
	t.Logf("terminals opened before the end: %v", opened)
}

// TestStdinToACommandThatDoesNotRead: a write to the stdin of a command
// that reads nothing waits past the pipe's and the launcher's buffers; it
// must honour its request's context, and one at a time may wait: the
// others are refused at once, so abandoned requests hold no goroutine,
// descriptor or buffer each (200 of them held 200 goroutines, and 100 of
// 1.9 MiB held 260 MiB). The waiting write ends with the command.
func TestStdinToACommandThatDoesNotRead(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	cmds := s.Commands()
	pid, err := cmds.Start(context.Background(), sessions.CommandRequest{Cmd: "exec sleep 1000", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	data := strings.Repeat("x", 2<<20) // past the pipe's and the launcher's 1 MiB
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err = cmds.Stdin(ctx, pid, data, false)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write the command does not read must end with its context: %v", err)
	}
	before := runtime.NumGoroutine()
	for range 100 {
		if err := cmds.Stdin(context.Background(), pid, data, false); !errors.Is(err, sessions.ErrStdinBusy) {
			t.Fatalf("a second write while one waits: %v", err)
		}
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Fatalf("refused writes left goroutines behind: %d before, %d after", before, after)
	}
	if err := cmds.Kill(pid); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		return errors.Is(cmds.Stdin(context.Background(), pid, "x", false), sessions.ErrCommandEnded)
	}, "the killed command's stdin to say it ended")
}

// TestStdinWritesBackToBack: a write that returned has given its place
// back, so the next one is never refused as busy (CI's Python SDK test
// sent two writes in a row and got stdin_busy for the second).
func TestStdinWritesBackToBack(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	cmds := s.Commands()
	pid, err := cmds.Start(context.Background(), sessions.CommandRequest{Cmd: "exec cat >/dev/null", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := cmds.Stdin(context.Background(), pid, "line\n", false); err != nil {
			t.Fatalf("write %d right after the one before returned: %v", i, err)
		}
	}
	if err := cmds.Stdin(context.Background(), pid, "", true); err != nil {
		t.Fatal(err)
	}
}
