package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/glassroom/glassroom/testkit"
)

// jupyterManager is fakeManager that also returns the fake kernels it
// dialed so far, newest last.
func jupyterManager(t *testing.T) (*sessions.Manager, *sessionstest.Runtime, func() []*sessionstest.Kernel) {
	t.Helper()
	m, rt := fakeManager(t, sessions.Config{})
	return m, rt, rt.Kernels
}

// next returns the next event of sub of type typ.
func next(t *testing.T, sub *sessions.Subscription, typ sessions.EventType) sessions.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatalf("subscription closed waiting for %s", typ)
			}
			if ev.Type == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

func TestJupyterStartedCarriesTheRequest(t *testing.T) {
	m, _, _ := jupyterManager(t)
	s := fakeSession(t, m)
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	parent := json.RawMessage(`{"msg_id":"m1","session":"c1","msg_type":"execute_request"}`)
	if _, err := s.First().Execute(context.Background(), sessions.ExecRequest{ID: "m1", Code: "x", Parent: parent}); err != nil {
		t.Fatal(err)
	}
	ev := next(t, sub, sessions.EventStarted)
	if ev.Exec == nil || string(ev.Exec.Parent) != string(parent) || ev.Exec.Code != "x" || ev.Exec.ExecutionCount != 1 || ev.Exec.Silent {
		t.Fatalf("started: %+v %+v", ev, ev.Exec)
	}
	if b, _ := json.Marshal(ev); strings.Contains(string(b), "m1\",\"") || strings.Contains(string(b), "msg_type") || strings.Contains(string(b), "Exec") {
		t.Fatalf("the Jupyter request leaks onto /v1: %s", b)
	}
	// The fake kernel replies with count 1: the next execution is
	// announced as 2, a silent one keeps the count.
	s.First().Execute(context.Background(), sessions.ExecRequest{Code: "y", Silent: true})
	if ev := next(t, sub, sessions.EventStarted); ev.Exec.ExecutionCount != 1 || !ev.Exec.Silent || ev.Exec.Parent != nil {
		t.Fatalf("silent /v1 execution: %+v", ev.Exec)
	}
	s.First().Execute(context.Background(), sessions.ExecRequest{Code: "z"})
	if ev := next(t, sub, sessions.EventStarted); ev.Exec.ExecutionCount != 2 {
		t.Fatalf("after a reply with count 1: %+v", ev.Exec)
	}
	// A new kernel counts from 1 again.
	if err := s.First().Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.First().Execute(context.Background(), sessions.ExecRequest{Code: "w"})
	if ev := next(t, sub, sessions.EventStarted); ev.Exec.ExecutionCount != 1 {
		t.Fatalf("after a restart: %+v", ev.Exec)
	}
	// Parents are bounded and must be JSON.
	for _, p := range []json.RawMessage{json.RawMessage(`{"a":` + strings.Repeat(" ", sessions.MaxParentBytes) + `1}`), json.RawMessage(`{nope`)} {
		if _, err := s.First().Submit(sessions.ExecRequest{Code: "x", Parent: p}); !errors.Is(err, sessions.ErrInvalid) {
			t.Fatalf("parent %.20q: %v", p, err)
		}
	}
	if _, err := s.First().Submit(sessions.ExecRequest{Code: "x", Group: strings.Repeat("g", sessions.MaxGroupBytes+1)}); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("long group: %v", err)
	}
	if _, err := s.First().Submit(sessions.ExecRequest{Code: "x", Owner: strings.Repeat("o", sessions.MaxOwnerBytes+1)}); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("long owner: %v", err)
	}
}

// TestJupyterInputOwner: on a real kernel, the input() of an execution
// submitted with an Owner is answered only by InputAs with that owner;
// Input (the /v1 face) and another owner are refused, even while an
// execution of the other owner with the same id waits in the queue.
func TestJupyterInputOwner(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	if _, err := s.First().Submit(sessions.ExecRequest{ID: "in", Code: "print('hi', input('who?'))", AllowStdin: true, Owner: "conn-1"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, sub, sessions.EventStarted); ev.Exec == nil || ev.Exec.Owner != "conn-1" {
		t.Fatalf("started: %+v", ev.Exec)
	}
	next(t, sub, sessions.EventInputRequest)
	if _, err := s.First().Submit(sessions.ExecRequest{ID: "in", Code: "'same id'", Owner: "conn-2"}); err != nil {
		t.Fatal(err)
	}
	for _, try := range []struct{ owner, id string }{{"", "in"}, {"conn-2", "in"}, {"conn-1", "other"}} {
		var err error
		if try.owner == "" {
			err = s.First().Input(try.id, "wrong")
		} else {
			err = s.First().InputAs(try.owner, try.id, "wrong")
		}
		if !errors.Is(err, sessions.ErrNoInputPending) {
			t.Errorf("input as %q for %q: %v", try.owner, try.id, err)
		}
	}
	if err := s.First().InputAs("conn-1", "in", "ada"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, sub, sessions.EventStream); ev.ID != "in" || !strings.Contains(ev.Text, "hi ada") {
		t.Fatalf("echo %+v", ev)
	}
}

func TestJupyterRunningNamesTheCurrentExecution(t *testing.T) {
	m, _, _ := jupyterManager(t)
	s := fakeSession(t, m)
	if _, _, ok := s.First().Running(); ok {
		t.Fatal("idle session reports a running execution")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.First().Execute(context.Background(), sessions.ExecRequest{ID: "long", Code: "loop", Parent: json.RawMessage(`{"msg_id":"long"}`)})
	}()
	waitState(t, s, sessions.StateBusy)
	id, info, ok := s.First().Running()
	if !ok || id != "long" || info.Code != "loop" || string(info.Parent) != `{"msg_id":"long"}` || info.Started.IsZero() {
		t.Fatalf("running: %q %+v %v", id, info, ok)
	}
	if err := s.First().Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, _, ok := s.First().Running(); ok {
		t.Fatal("finished execution still running")
	}
}

// waitQueued waits until at least n executions of s wait in its queue.
func waitQueued(t *testing.T, s *sessions.Session, n int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() bool { return s.Info().Queued >= n },
		"%d executions waiting in the queue: last seen %d", n, testkit.Seen(func() any { return s.Info().Queued }))
}

// TestJupyterStopOnError: when an execution sent with StopOnError fails,
// the executions of its group queued behind it end "aborted" without
// running; other groups' and later ones run.
func TestJupyterStopOnError(t *testing.T) {
	m, _, _ := jupyterManager(t)
	s := fakeSession(t, m)
	exec := func(id, code, group string, stop bool) chan *sessions.Execution {
		c := make(chan *sessions.Execution, 1)
		go func() {
			e, err := s.First().Execute(context.Background(), sessions.ExecRequest{ID: id, Code: code, Group: group, StopOnError: stop})
			if err != nil {
				t.Error(err)
			}
			c <- e
		}()
		return c
	}
	a := exec("a", "loop", "g", true)
	waitState(t, s, sessions.StateBusy)
	b := exec("b", "print:b", "g", false)
	waitQueued(t, s, 1)
	c := exec("c", "print:c", "other", true)
	waitQueued(t, s, 2)
	v1 := exec("d", "print:d", "", false)
	waitQueued(t, s, 3)
	if err := s.First().Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := <-a; e.Status != sessions.StatusInterrupted {
		t.Fatalf("a: %+v", e)
	}
	if e := <-b; e.Status != sessions.StatusAborted || e.Stdout != "" {
		t.Fatalf("b, queued behind a in its group: %+v", e)
	}
	if e := <-c; e.Status != sessions.StatusOK || e.Stdout != "c" {
		t.Fatalf("c, another group: %+v", e)
	}
	if e := <-v1; e.Status != sessions.StatusOK || e.Stdout != "d" {
		t.Fatalf("d, from /v1: %+v", e)
	}
	if e := <-exec("e", "print:e", "g", true); e.Status != sessions.StatusOK || e.Stdout != "e" {
		t.Fatalf("e, sent after the failure: %+v", e)
	}
	// A failure without StopOnError aborts nothing.
	f := exec("f", "loop", "g", false)
	waitState(t, s, sessions.StateBusy)
	g := exec("g", "print:g", "g", false)
	waitQueued(t, s, 1)
	s.First().Interrupt(context.Background())
	<-f
	if e := <-g; e.Status != sessions.StatusOK {
		t.Fatalf("g: %+v", e)
	}
}

func TestJupyterKernelRequests(t *testing.T) {
	m, _, kernels := jupyterManager(t)
	s := fakeSession(t, m)
	ctx := context.Background()
	r, err := s.First().KernelRequest(ctx, kernel.Shell, "complete_request", json.RawMessage(`{"code":"pri","cursor_pos":3}`))
	if err != nil || r.MsgType != "complete_reply" || string(r.Content) != `{"status":"ok"}` {
		t.Fatalf("complete: %+v %v", r, err)
	}
	for _, bad := range []struct {
		ch      kernel.Channel
		typ     string
		content string
	}{
		{kernel.Shell, "execute_request", `{"code":"1"}`},                               // goes through the queue
		{kernel.Control, "shutdown_request", `{}`},                                      // Session.Restart, Manager.Delete
		{kernel.Control, "interrupt_request", `{}`},                                     // Session.Interrupt
		{kernel.Shell, "debug_request", `{}`},                                           // control only
		{kernel.Stdin, "input_reply", `{}`},                                             // Session.Input
		{kernel.Shell, "complete_request", `[1]`},                                       // not an object
		{kernel.Shell, "complete_request", `null`},                                      // not an object
		{kernel.Shell, "comm_info_request", `{"x":` + strings.Repeat("1", 2<<20) + `}`}, // too big
	} {
		if _, err := s.First().KernelRequest(ctx, bad.ch, bad.typ, json.RawMessage(bad.content)); !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("%s on %s: %v", bad.typ, bad.ch, err)
		}
	}
	before := kernels()[0].Requests()
	id := s.First().KernelSession()
	for i := 0; i < 3; i++ {
		info, err := s.First().KernelInfo(ctx)
		if err != nil || !strings.Contains(string(info), `"implementation":"fake"`) {
			t.Fatalf("kernel info: %s %v", info, err)
		}
		if s.First().KernelSession() != id {
			t.Fatal("kernel session changed without a restart")
		}
	}
	if n := kernels()[0].Requests() - before; n != 1 {
		t.Fatalf("kernel_info asked %d times, want once per kernel", n)
	}
	if err := s.First().Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.First().KernelInfo(ctx); err != nil {
		t.Fatal(err)
	}
	if ks := kernels(); len(ks) != 2 || ks[1].Requests() != 1 {
		t.Fatalf("the new kernel was not asked: %d kernels", len(ks))
	}
	if s.First().KernelSession() == id {
		t.Fatal("kernel session kept across a restart")
	}
}
