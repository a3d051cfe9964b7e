package sessions_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/rs/zerolog"
)

// fakeManager is a manager over the fake runtime (sessionstest); it runs
// in parallel with the other fast tests.
func fakeManager(t *testing.T, cfg sessions.Config) (*sessions.Manager, *sessionstest.Runtime) {
	t.Helper()
	t.Parallel()
	return sessionstest.NewManager(t, cfg)
}

func fakeSession(t *testing.T, m *sessions.Manager) *sessions.Session {
	t.Helper()
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run is exec for a fake kernel: it must answer within 10 s.
func run(t *testing.T, s *sessions.Session, code string, timeout time.Duration) *sessions.Execution {
	t.Helper()
	return execWithin(t, s, code, timeout, 10*time.Second)
}

func waitState(t *testing.T, s *sessions.Session, want sessions.State) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if s.Info().State == want {
			return
		}
	}
	t.Fatalf("state %s, want %s", s.Info().State, want)
}

func TestWorkerRestartDuringARun(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	j := make(chan *sessions.Execution, 1)
	go func() {
		e, _ := s.First().Execute(context.Background(), sessions.ExecRequest{Code: "stubborn"})
		j <- e
	}()
	waitState(t, s, sessions.StateBusy)
	if err := s.First().Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := <-j
	if e.Status != sessions.StatusInterrupted || !e.StateLost || e.Reason != "kernel restarted" {
		t.Fatalf("running job: %+v", e)
	}
	if e := run(t, s, "print:after", 0); e.Status != sessions.StatusOK || e.Stdout != "after" {
		t.Fatalf("after restart: %+v", e)
	}
}

func TestWorkerDeathDuringARestart(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	rt.FailRestarts(true)
	e := run(t, s, "die", 0)
	if e.Status != sessions.StatusDied || !e.StateLost || !strings.Contains(e.Reason, "exit status 1") {
		t.Fatalf("dying job: %+v", e)
	}
	waitState(t, s, sessions.StateDead)
	// A job on a dead kernel tries a restart first, and says why it failed.
	if e := run(t, s, "print:x", 0); e.Status != sessions.StatusDied || !strings.HasPrefix(e.Reason, "kernel is dead: ") || !strings.Contains(e.Reason, "restart failed") {
		t.Fatalf("job on a dead kernel: %+v", e)
	}
	if err := s.First().Restart(context.Background()); !errors.Is(err, sessions.ErrKernelDead) {
		t.Fatalf("restart while restarts fail: %v", err)
	}
	rt.FailRestarts(false)
	// Once restarts work again (the engine is back), the next job restarts
	// the kernel and runs.
	if e := run(t, s, "print:back", 0); e.Status != sessions.StatusOK || e.Stdout != "back" {
		t.Fatalf("job once restarts work again: %+v", e)
	}
	waitState(t, s, sessions.StateIdle)
	if err := s.First().Restart(context.Background()); err != nil {
		t.Fatalf("restart once they work again: %v", err)
	}
}

func TestWorkerDrainsTheQueueOnClose(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	results := make(chan *sessions.Execution, 4)
	for i := 0; i < 4; i++ {
		go func() {
			e, err := s.First().Execute(context.Background(), sessions.ExecRequest{Code: "stubborn"})
			if err == nil {
				results <- e
			}
		}()
	}
	for s.Info().Queued < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := m.Delete(context.Background(), "t", s.ID()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if e := <-results; e.Status != sessions.StatusDied || e.Reason != "session deleted" {
			t.Fatalf("job %d after close: %+v", i, e)
		}
	}
	if rt.LiveSandboxes() != 0 {
		t.Fatal("sandbox not closed")
	}
}

func TestWorkerTimeouts(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	if e := run(t, s, "loop", 50*time.Millisecond); e.Status != sessions.StatusTimeout || e.StateLost {
		t.Fatalf("interruptible timeout: %+v", e)
	}
	if e := run(t, s, "stubborn", 50*time.Millisecond); e.Status != sessions.StatusTimeout || !e.StateLost {
		t.Fatalf("stubborn timeout: %+v", e)
	}
	// A kernel slow to obey (it makes progress: the machine is busy) is
	// interrupted again, each grace, and keeps its variables; the reply
	// says so.
	if e := run(t, s, "slowobey:2", 50*time.Millisecond); e.Status != sessions.StatusTimeout || e.StateLost ||
		!strings.Contains(e.Reason, "3 interrupts") || !strings.Contains(e.Reason, "variables are kept") {
		t.Fatalf("slow kernel: %+v", e)
	}
	// The stubborn one is restarted after one grace: no progress.
	if e := run(t, s, "stubborn", 50*time.Millisecond); !e.StateLost || !strings.Contains(e.Reason, "no progress within") {
		t.Fatalf("stubborn timeout's reason: %+v", e)
	}
	// A kernel that makes progress but never obeys: restarted once
	// InterruptMaxWait has passed.
	if e := run(t, s, "spin", 50*time.Millisecond); e.Status != sessions.StatusTimeout || !e.StateLost ||
		!strings.Contains(e.Reason, "still running") {
		t.Fatalf("spinning kernel: %+v", e)
	}
	// A kernel that obeyed the interrupt but whose output is still
	// draining past the grace is not restarted.
	if e := run(t, s, "drain:400ms", 10*time.Millisecond); e.StateLost {
		t.Fatalf("draining kernel restarted: %+v", e)
	}
	if e := run(t, s, "print:ok", 0); e.Status != sessions.StatusOK {
		t.Fatalf("session unusable: %+v", e)
	}
}

func TestWorkerRecoversADeadKernel(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	if e := run(t, s, "die", 0); e.Status != sessions.StatusDied {
		t.Fatalf("%+v", e)
	}
	var states []string
	for ev := range sub.C {
		if ev.Type == sessions.EventKernel {
			states = append(states, ev.State)
			if ev.State == "idle" {
				break
			}
		}
	}
	if strings.Join(states, ",") != "busy,dead,restarting,idle" {
		t.Fatalf("kernel states %v", states)
	}
}

func TestCreateUndoesEverythingOnAPanic(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{})
	rt.PanicDials(true)
	_, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "truncated READY") {
		t.Fatalf("create with a panicking dial: %v", err)
	}
	if rt.LiveSandboxes() != 0 {
		t.Fatal("sandbox of the failed create left running")
	}
	rt.PanicDials(false)
	s := fakeSession(t, m)
	// A panic when re-dialling after a restart leaves the session dead,
	// not the gateway.
	rt.PanicDials(true)
	if err := s.First().Restart(context.Background()); !errors.Is(err, sessions.ErrKernelDead) || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("restart with a panicking dial: %v", err)
	}
	rt.PanicDials(false)
	if err := s.First().Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSubmitWaitsForRoom(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{QueueDepth: 2})
	s := fakeSession(t, m)
	if _, err := s.First().Submit(sessions.ExecRequest{Code: "sleep:100ms"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, sessions.StateBusy)
	for i := 0; i < 2; i++ { // one running, two queued
		if _, err := s.First().Submit(sessions.ExecRequest{Code: "sleep:50ms"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.First().Submit(sessions.ExecRequest{Code: "print:x"}); !errors.Is(err, sessions.ErrQueueFull) {
		t.Fatalf("full queue: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.First().SubmitWait(ctx, sessions.ExecRequest{Code: "print:x"}); err != nil {
		t.Fatalf("SubmitWait: %v", err)
	}
}

// TestRealDialPanicFreesTheSandbox: with the real local runtime, a create
// whose dial panics closes the sandbox and frees its slot, uid, directory
// and cgroup: the runtime's single slot serves the next create.
func TestRealDialPanicFreesTheSandbox(t *testing.T) {
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	rt, err := newLocalWith(t, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	var panics bool
	dial := func(ctx context.Context, info kernelInfo, cfg kernelConfig, log zerolog.Logger) (sessions.KernelConn, error) {
		if !panics {
			panics = true
			panic("hostile handshake")
		}
		return realDial(ctx, info, cfg, log)
	}
	started := &startRecorder{Runtime: rt}
	m, err := sessions.New(sessions.Config{Dial: dial}, started, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if _, err := m.Create(context.Background(), "t", sessions.CreateOptions{}); err == nil {
		t.Fatal("create succeeded with a panicking dial")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != sandbox.ShimStateDir && e.Name() != local.ForkServerDir { // the runtime's own
			t.Fatalf("state dir not empty after the failed create: %v", ents)
		}
	}
	if len(started.ids) != 1 {
		t.Fatalf("started %v", started.ids)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/memory/glassroom/*-" + started.ids[0]); len(left) > 0 {
		t.Errorf("cgroup of %s left behind: %v", started.ids[0], left)
	}
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatalf("the only slot was not freed: %v", err)
	}
	if e := exec(t, s, "1 + 1", 0); string(e.Result) != `{"text/plain":"2"}` {
		t.Fatalf("%+v", e)
	}
}

// startRecorder is a runtime that remembers the ids it was asked to start.
type startRecorder struct {
	sessions.Runtime
	ids []string
}

func (r *startRecorder) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	r.ids = append(r.ids, spec.ID)
	return r.Runtime.Start(ctx, spec)
}

// TestLifetimeNeverPastTheMax: PATCH lifetime moves the end either way,
// but never past MaxLifetime after the creation (it set now + N, so a
// session extended in a loop lived for ever).
func TestLifetimeNeverPastTheMax(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{MaxLifetime: time.Hour})
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{Lifetime: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	created := s.Info().CreatedAt
	if err := s.SetLifetime(50 * time.Minute); err != nil {
		t.Fatalf("an extension within the max: %v", err)
	}
	err = s.SetLifetime(time.Hour)
	if !errors.Is(err, sessions.ErrInvalid) || !strings.Contains(err.Error(), "may live") {
		t.Fatalf("an extension past the max after creation: %v", err)
	}
	if end := s.Info().EndAt; end.After(created.Add(time.Hour)) {
		t.Fatalf("end %v is past creation + max %v", end, created.Add(time.Hour))
	}
}

// TestQueuedCodeIsBounded: behind a running execution, a kernel's queue
// holds at most QueueCodeBytes of code (gateway memory no budget counts):
// two executions of 1 MiB fill the default 2 MiB, a third is refused as
// a full queue, small ones too, and once the queue drains there is room.
// Without the bound 32 of them (32 MiB a kernel) queued.
func TestQueuedCodeIsBounded(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	if _, err := s.First().Submit(sessions.ExecRequest{ID: "loop", Code: "loop"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, sessions.StateBusy)
	big := strings.Repeat("x", 1<<20-64)
	for i := range 2 {
		if _, err := s.First().Submit(sessions.ExecRequest{Code: big}); err != nil {
			t.Fatalf("queued execution %d of 1 MiB: %v", i+1, err)
		}
	}
	_, err := s.First().Submit(sessions.ExecRequest{Code: big})
	if !errors.Is(err, sessions.ErrQueueFull) || !strings.Contains(err.Error(), "bytes of code waiting") {
		t.Fatalf("a third 1 MiB execution behind two: %v, want ErrQueueFull naming the code bytes", err)
	}
	if _, err := s.First().Submit(sessions.ExecRequest{Code: strings.Repeat("y", 200<<10)}); !errors.Is(err, sessions.ErrQueueFull) {
		t.Fatalf("200 KiB more behind 2 MiB: %v, want ErrQueueFull", err)
	}
	if err := s.First().Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.First().SubmitWait(ctx, sessions.ExecRequest{Code: big}); err != nil {
		t.Fatalf("SubmitWait once the queue drains: %v", err)
	}
	e, err := s.First().Execute(ctx, sessions.ExecRequest{Code: "print:done"})
	if err != nil || strings.TrimSpace(e.Stdout) != "done" {
		t.Fatalf("after: %+v %v", e, err)
	}
}

// A kernel that replies and then exits (Python's exit(): the reply is on
// the wire when the process ends) gives its execution's result, not a
// death; the kernel is then restarted, as after any exit.
func TestReplySentBeforeExitIsKept(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	e := run(t, s, "lateexit:bye", 0)
	if e.Status != sessions.StatusOK || e.Stdout != "bye" {
		t.Fatalf("execution whose reply came after the process exit: %+v", e)
	}
	for {
		if ev := next(t, sub, sessions.EventKernel); ev.State == string(sessions.StateDead) {
			break
		}
	}
	waitState(t, s, sessions.StateIdle)
}
