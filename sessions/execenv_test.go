package sessions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
)

// The plumbing of an execution's envs and cwd on fake kernels: which
// executions reach the kernel, in which order and with which options, and
// what the caller sees. That the snippets really set and put back the
// variables and the directory of each language is tested on real kernels
// (app.TestExecutionEnvs).

func settingsReq(code string) sessions.ExecRequest {
	return sessions.ExecRequest{Code: code, Envs: map[string]string{"B_VAR": "it's $(x)", "A_VAR": "1"}, Cwd: "sub"}
}

func execute(t *testing.T, s *sessions.Session, req sessions.ExecRequest) *sessions.Execution {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := s.First().Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// isApply and isRestore recognise Python's snippets.
func isApply(c sessionstest.Call) bool {
	return c.Silent && c.NoHistory && strings.Contains(c.Code, "_glassroom_exec_settings = saved") &&
		strings.Contains(c.Code, `\"/home/user/sub\"`) && strings.Contains(c.Code, `[\"A_VAR\", \"1\"], [\"B_VAR\"`)
}

func isRestore(c sessionstest.Call) bool {
	return c.Silent && c.NoHistory && strings.Contains(c.Code, "del sys._glassroom_exec_settings")
}

// tail returns the kernel's executions after the first n.
func tail(rt *sessionstest.Runtime, n int) []sessionstest.Call { return rt.Executions()[n:] }

func TestSettingsRunAroundTheCode(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	sub := s.Subscribe(0)
	defer sub.Close()
	n := len(rt.Executions())
	e := execute(t, s, settingsReq("print:hi"))
	calls := tail(rt, n)
	if len(calls) != 3 || !isApply(calls[0]) || calls[1].Code != "print:hi" || calls[1].Silent || !isRestore(calls[2]) {
		t.Fatalf("the kernel ran %+v; want the apply, the code, the restore", calls)
	}
	// What the snippets answer (the fake shows their code as a result) is
	// not the caller's.
	if e.Status != sessions.StatusOK || e.Stdout != "hi" || len(e.Outputs) != 1 || e.Result != nil {
		t.Fatalf("execution: %+v", e)
	}
	for done := false; !done; {
		select {
		case ev := <-sub.C:
			if ev.Type == sessions.EventResult || (ev.Exec != nil && ev.Exec.Code != "print:hi") {
				t.Fatalf("a snippet reached the event log: %+v", ev)
			}
			done = ev.Type == sessions.EventDone
		case <-time.After(10 * time.Second):
			t.Fatal("no done event")
		}
	}
	// Without settings the code runs alone.
	n = len(rt.Executions())
	execute(t, s, sessions.ExecRequest{Code: "print:plain"})
	if calls := tail(rt, n); len(calls) != 1 || calls[0].Code != "print:plain" {
		t.Fatalf("without settings the kernel ran %+v", calls)
	}
}

func TestSettingsRestoredAfterInterruptAndTimeout(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)

	// A timeout's interrupt that the code obeys.
	n := len(rt.Executions())
	req := settingsReq("loop")
	req.Timeout = 50 * time.Millisecond
	if e := execute(t, s, req); e.Status != sessions.StatusTimeout || e.StateLost {
		t.Fatalf("timed out: %+v", e)
	}
	if calls := tail(rt, n); len(calls) != 3 || !isApply(calls[0]) || calls[1].Code != "loop" || !isRestore(calls[2]) {
		t.Fatalf("after a timeout the kernel ran %+v", calls)
	}

	// A client's interrupt.
	n = len(rt.Executions())
	done := make(chan *sessions.Execution, 1)
	go func() { done <- execute(t, s, settingsReq("loop")) }()
	waitState(t, s, sessions.StateBusy)
	var e *sessions.Execution
	for deadline := time.Now().Add(10 * time.Second); e == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("the interrupted loop never ended within 10s: state %s", s.Info().State)
		}
		if err := s.First().Interrupt(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case e = <-done:
		case <-time.After(100 * time.Millisecond): // an interrupt that came before the loop is sent again
		}
	}
	if e.Status != sessions.StatusInterrupted || e.StateLost {
		t.Fatalf("interrupted: %+v", e)
	}
	if calls := tail(rt, n); len(calls) != 3 || calls[1].Code != "loop" || !isRestore(calls[2]) {
		t.Fatalf("after an interrupt the kernel ran %+v", calls)
	}

	// A timeout the code ignores: the kernel is restarted instead (it
	// comes back with the session's own environment); nothing to put back.
	n = len(rt.Executions())
	req = settingsReq("stubborn")
	req.Timeout = 50 * time.Millisecond
	if e := execute(t, s, req); e.Status != sessions.StatusTimeout || !e.StateLost {
		t.Fatalf("stubborn: %+v", e)
	}
	if calls := tail(rt, n); len(calls) != 2 || calls[1].Code != "stubborn" {
		t.Fatalf("after a stubborn timeout the kernel ran %+v", calls)
	}
	if e := execute(t, s, sessions.ExecRequest{Code: "print:next"}); e.Status != sessions.StatusOK {
		t.Fatalf("after the restart: %+v", e)
	}
}

func TestSettingsApplyFails(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	n := len(rt.Executions())
	req := settingsReq("print:never")
	req.Cwd = "missing"
	e := execute(t, s, req)
	if e.Status != sessions.StatusError || e.Error == nil || e.Error.Name != "SettingsError" ||
		!strings.Contains(e.Error.Value, "cwd /home/user/missing: no such directory") || e.StateLost {
		t.Fatalf("a failed apply: %+v %+v", e, e.Error)
	}
	calls := tail(rt, n)
	if len(calls) != 2 || !strings.Contains(calls[0].Code, sessionstest.MissingDir) || !isRestore(calls[1]) {
		t.Fatalf("a failed apply: the kernel ran %+v; want the apply and the restore, not the code", calls)
	}
	if len(e.Outputs) != 1 || e.Outputs[0].Type != sessions.EventError {
		t.Fatalf("a failed apply's outputs: %+v", e.Outputs)
	}
}

func TestSettingsRefused(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	n := len(rt.Executions())
	for _, tc := range []struct {
		envs map[string]string
		cwd  string
		want string
	}{
		{envs: map[string]string{"LD_PRELOAD": "x"}, want: "LD_PRELOAD"},
		{envs: map[string]string{"PATH": "/tmp"}, want: "PATH"},
		{envs: map[string]string{"PYTHONPATH": "/tmp"}, want: "PYTHONPATH"},
		{envs: map[string]string{"a-b": "x"}, want: "a-b"},
		{envs: map[string]string{"X": "nul\x00"}, want: "NUL"},
		{cwd: "../etc", want: "outside"},
		{cwd: "/etc", want: "outside"},
		{cwd: "a\x00b", want: "NUL"},
	} {
		_, err := s.First().Execute(context.Background(), sessions.ExecRequest{Code: "print:x", Envs: tc.envs, Cwd: tc.cwd})
		var ie *sessions.InvalidError
		if !errors.As(err, &ie) || !errors.Is(err, sessions.ErrInvalid) || !strings.Contains(ie.Public(), tc.want) {
			t.Errorf("envs %q cwd %q: %v; want an InvalidError naming %q", tc.envs, tc.cwd, err, tc.want)
		}
	}
	// bash's own variables, in a bash context only.
	b, err := s.Contexts().Resolve(context.Background(), "", "bash")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PS1", "IFS", "PROMPT_COMMAND", "BASHOPTS", "__glassroom_st", "_"} {
		_, err := b.Execute(context.Background(), sessions.ExecRequest{Code: "print:x", Envs: map[string]string{name: "x"}})
		if !errors.Is(err, sessions.ErrInvalid) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "bash") {
			t.Errorf("%s in bash: %v", name, err)
		}
	}
	if calls := tail(rt, n); len(calls) != 0 {
		t.Fatalf("refused requests reached the kernel: %+v", calls)
	}
	if e := execute(t, s, sessions.ExecRequest{Code: "print:x", Envs: map[string]string{"PS1": "x"}}); e.Status != sessions.StatusOK {
		t.Fatalf("PS1 in Python: %+v", e)
	}
}

// TestErrorReplyWithoutErrorMessage (short tier): a kernel that replies
// an error but sent no error message (IPython's UsageError) gives the
// execution its error from the reply, on the event stream too; a silent
// or Jupyter execution keeps the kernel's messages as they were.
func TestErrorReplyWithoutErrorMessage(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{})
	s := fakeSession(t, m)
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	e := execute(t, s, sessions.ExecRequest{ID: "usage-1", Code: "usageerror:Line magic function `%lprun` not found."})
	if e.Status != sessions.StatusError || e.Error == nil || e.Error.Name != "UsageError" ||
		e.Error.Value != "Line magic function `%lprun` not found." || !strings.Contains(e.Stderr, "UsageError") {
		t.Fatalf("an error reply without an error message: %+v error %+v", e, e.Error)
	}
	var types []sessions.EventType
	for ev := range sub.C {
		if ev.ID != "usage-1" {
			continue
		}
		types = append(types, ev.Type)
		if ev.Type == sessions.EventDone {
			break
		}
	}
	if len(types) < 2 || types[len(types)-2] != sessions.EventError {
		t.Fatalf("the stream's events: %v; want the error just before done", types)
	}
	for _, req := range []sessions.ExecRequest{
		{Code: "usageerror:quiet", Silent: true},
		{Code: "usageerror:jupyter", Parent: []byte(`{"msg_id":"j"}`)},
	} {
		if e := execute(t, s, req); e.Status != sessions.StatusError || e.Error != nil {
			t.Fatalf("%q: %+v error %+v; want the kernel's messages only", req.Code, e, e.Error)
		}
	}
}
