package sessions_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/glassroom/glassroom/testkit"
)

// TestCommandCaps: a command's output is cut at MaxStreamBytes (valid
// UTF-8 across chunks), and so are its events; the cut is reported.
func TestCommandCaps(t *testing.T) {
	m, _ := sessionstest.NewManager(t, sessions.Config{MaxStreamBytes: 3000})
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	st, err := s.Commands().Run(context.Background(), sessions.CommandRequest{Cmd: "out 100000"})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Truncated || len(st.Stdout) > 3000 || len(st.Stdout) < 2900 || strings.ContainsRune(st.Stdout, '\uFFFD') || *st.ExitCode != 0 {
		t.Fatalf("truncated=%v, %d bytes, exit %v", st.Truncated, len(st.Stdout), st.ExitCode)
	}
	published := 0
	for ev := range sub.C {
		if ev.Type == sessions.EventCommand && ev.Name == "stdout" {
			published += len(ev.Text)
		}
		if ev.Type == sessions.EventCommand && ev.State == "exited" {
			break
		}
	}
	if published != len(st.Stdout) {
		t.Fatalf("published %d bytes, kept %d", published, len(st.Stdout))
	}
}

// TestCommandLimits: at most MaxRunningCommands run at once; a timeout
// kills a foreground command (exit -1, timed out); KeptCommands finished
// ones are kept; unknown pids are ErrCommandNotFound; Close kills what
// runs and waits for it.
func TestCommandLimits(t *testing.T) {
	m, rt := sessionstest.NewManager(t, sessions.Config{})
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmds := s.Commands()
	ctx := context.Background()
	st, err := cmds.Run(ctx, sessions.CommandRequest{Cmd: "hang", Timeout: 10 * time.Millisecond})
	if err != nil || !st.TimedOut || *st.ExitCode != -1 {
		t.Fatalf("timeout: %+v %v", st, err)
	}
	var pids []int
	for range sessions.MaxRunningCommands {
		pid, err := cmds.Start(ctx, sessions.CommandRequest{Cmd: "hang", Background: true})
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if _, err := cmds.Start(ctx, sessions.CommandRequest{Cmd: "hang", Background: true}); !errors.Is(err, sessions.ErrTooManyCommands) {
		t.Fatalf("one too many: %v", err)
	}
	if err := cmds.Kill(pids[0]); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		st, err := cmds.Get(pids[0])
		return err == nil && !st.Running
	}, "the killed command to end")
	for i := range sessions.KeptCommands + 5 {
		if _, err := cmds.Run(ctx, sessions.CommandRequest{Cmd: "exit " + strconv.Itoa(i%3)}); err != nil {
			t.Fatal(err)
		}
	}
	list := cmds.List()
	if len(list) != sessions.KeptCommands+sessions.MaxRunningCommands-1 {
		t.Fatalf("%d commands listed", len(list))
	}
	if _, err := cmds.Get(1); !errors.Is(err, sessions.ErrCommandNotFound) {
		t.Fatalf("the oldest finished: %v", err)
	}
	if err := cmds.Kill(12345); !errors.Is(err, sessions.ErrCommandNotFound) {
		t.Fatalf("kill of an unknown pid: %v", err)
	}
	if _, err := cmds.Run(ctx, sessions.CommandRequest{Cmd: "true", Env: map[string]string{"PATH": "x"}}); !errors.Is(err, sessions.ErrBadSpec) {
		t.Fatalf("a refused env: %v", err)
	}
	if err := m.Delete(ctx, "t", s.ID()); err != nil {
		t.Fatal(err)
	}
	rt.WaitCommands() // every command's play ended: Delete killed them
	if _, err := cmds.Start(ctx, sessions.CommandRequest{Cmd: "hang", Background: true}); !errors.Is(err, sessions.ErrClosed) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestTerminalStartingWhileTheSessionCloses: a terminal holds its place
// before its shell exists; a session that closes meanwhile (a DELETE, or
// the lifetime reaper) must not take the placeholder for a shell (a nil
// command's Kill panicked on the reaper's goroutine and took the gateway
// down), and the shell that starts after the close is killed.
func TestTerminalStartingWhileTheSessionCloses(t *testing.T) {
	for try := range 20 {
		m, rt := sessionstest.NewManager(t, sessions.Config{})
		gate := rt.GateTerminals()
		s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			term *sessions.Terminal
			err  error
		}
		started := make(chan result, 1)
		go func() {
			term, err := s.Commands().Terminal(context.Background(), 80, 24, false)
			started <- result{term, err}
		}()
		held := <-gate // the terminal holds its place, with no shell yet
		released := false
		deleted := make(chan error, 1)
		go func() { deleted <- m.Delete(context.Background(), "t", s.ID()) }()
		if try%2 == 1 {
			// Half the tries let the shell start while the close runs.
			held.Release()
			released = true
		}
		if err := <-deleted; err != nil {
			t.Fatalf("try %d: delete while a terminal starts: %v", try, err)
		}
		if !released {
			held.Release()
		}
		r := <-started
		if r.err == nil {
			select {
			case _, open := <-r.term.Output():
				for open {
					_, open = <-r.term.Output()
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("try %d: the shell started after the close was not killed (its output never ended)", try)
			}
			r.term.Close()
		} else if !errors.Is(r.err, sessions.ErrClosed) {
			t.Fatalf("try %d: terminal: %v", try, r.err)
		}
		rt.WaitCommands()
	}
}

// TestCommandPIDs: a command's pid is the one the sandbox tells, unless
// the sandbox tells none (then the session's own, from OwnPIDBase) or it
// still names a running command; a finished command whose pid was reused
// is forgotten, and the newer one is found by it.
func TestCommandPIDs(t *testing.T) {
	m, _ := sessionstest.NewManager(t, sessions.Config{})
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmds, ctx := s.Commands(), context.Background()
	st, err := cmds.Run(ctx, sessions.CommandRequest{Cmd: "pid=42 exit 3"})
	if err != nil || st.PID != 42 {
		t.Fatalf("the told pid: %+v %v", st, err)
	}
	again, err := cmds.Start(ctx, sessions.CommandRequest{Cmd: "pid=42 hang", Background: true})
	if err != nil || again != 42 {
		t.Fatalf("a reused pid: %d %v", again, err)
	}
	if got, err := cmds.Get(42); err != nil || !got.Running {
		t.Fatalf("the pid names the newer command: %+v %v", got, err)
	}
	if n := len(cmds.List()); n != 1 {
		t.Fatalf("the finished command with the reused pid is forgotten: %d listed", n)
	}
	clash, err := cmds.Start(ctx, sessions.CommandRequest{Cmd: "pid=42 hang", Background: true})
	if err != nil || clash != sessions.OwnPIDBase+1 {
		t.Fatalf("a pid of a running command: %d %v", clash, err)
	}
	own, err := cmds.Start(ctx, sessions.CommandRequest{Cmd: "hang", Background: true})
	if err != nil || own != sessions.OwnPIDBase+2 {
		t.Fatalf("no pid told: %d %v", own, err)
	}
	for _, pid := range []int{42, clash, own} {
		if err := cmds.Kill(pid); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSandboxFileReadsAreBounded: however many files a client asks for at
// once, a session runs at most four of the gateway's own commands in its
// sandbox (the rest wait their turn, or their context's end).
func TestSandboxFileReadsAreBounded(t *testing.T) {
	m, rt := sessionstest.NewManager(t, sessions.Config{})
	s, err := m.Create(context.Background(), "t", sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	const n = 10
	errs := make(chan error, n)
	for range n { // the fake's reads hang until killed
		go func() {
			_, err := s.Commands().ReadSandboxFile(ctx, "/proc/self/status", 0)
			errs <- err
		}()
	}
	testkit.Eventually(t, 30*time.Second, func() bool { now, _ := rt.Commands(); return now == 4 }, "four reads running in the sandbox")
	cancel()
	for range n {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("a read whose context ended: %v", err)
		}
	}
	if _, most := rt.Commands(); most != 4 {
		t.Fatalf("%d reads ran at once, want 4", most)
	}
}
