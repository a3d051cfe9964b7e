package sessions_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// fakeCommand plays a command: "out N" writes N bytes (in 1000-byte
// chunks, the first byte of a 2-byte rune cut at each chunk's end),
// "exit K" exits K at once, "hang" runs until killed.
type fakeCommand struct {
	out    chan sandbox.CommandOutput
	killed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	exit   sandbox.CommandExit
}

func (s *fakeSandbox) StartCommand(_ context.Context, spec sandbox.CommandSpec) (sandbox.Command, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	if spec.TTY && s.rt.ttyGate != nil {
		release := make(chan struct{})
		s.rt.ttyGate <- release
		<-release
	}
	c := &fakeCommand{out: make(chan sandbox.CommandOutput), killed: make(chan struct{})}
	s.rt.cmds.Add(1)
	go func() { // ends when the play does or the command is killed
		defer s.rt.cmds.Done()
		defer close(c.out)
		f := strings.Fields(spec.Cmd)
		if len(f) == 0 { // a terminal: its shell runs until killed
			f = []string{"hang"}
		}
		switch f[0] {
		case "out":
			n, _ := strconv.Atoi(f[1])
			for sent := 0; sent < n; sent += 1000 {
				chunk := []byte(strings.Repeat("é", 499) + "\xc3")
				if sent > 0 {
					chunk = append([]byte{0xa9}, chunk...)
				}
				select {
				case c.out <- sandbox.CommandOutput{Stream: sandbox.Stdout, Data: chunk}:
				case <-c.killed:
					c.setExit(137)
					return
				}
			}
			c.setExit(0)
		case "exit":
			k, _ := strconv.Atoi(f[1])
			c.setExit(k)
		default:
			<-c.killed
			c.setExit(137)
		}
	}()
	return c, nil
}

func (c *fakeCommand) setExit(code int) {
	c.mu.Lock()
	c.exit = sandbox.CommandExit{Code: code}
	c.mu.Unlock()
}
func (c *fakeCommand) Output() <-chan sandbox.CommandOutput { return c.out }
func (c *fakeCommand) Write([]byte) error                   { return nil }
func (c *fakeCommand) CloseStdin() error                    { return nil }
func (c *fakeCommand) Resize(int, int) error                { return nil }
func (c *fakeCommand) Kill() error                          { c.once.Do(func() { close(c.killed) }); return nil }
func (c *fakeCommand) Exit() sandbox.CommandExit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}

func commandsManager(t *testing.T, cfg sessions.Config) (*sessions.Manager, *fakeRuntime) {
	t.Helper()
	rt := newFakeRuntime(t.TempDir())
	cfg.Dial = rt.dial
	m, err := sessions.New(cfg, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, rt
}

// TestCommandCaps: a command's output is cut at MaxStreamBytes (valid
// UTF-8 across chunks), and so are its events; the cut is reported.
func TestCommandCaps(t *testing.T) {
	m, _ := commandsManager(t, sessions.Config{MaxStreamBytes: 3000})
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
	m, rt := commandsManager(t, sessions.Config{})
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
	rt.cmds.Wait() // every command's play ended: Delete killed them
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
		m, rt := commandsManager(t, sessions.Config{})
		rt.ttyGate = make(chan chan struct{})
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
		release := <-rt.ttyGate // the terminal holds its place, with no shell yet
		deleted := make(chan error, 1)
		go func() { deleted <- m.Delete(context.Background(), "t", s.ID()) }()
		if try%2 == 1 {
			// Half the tries let the shell start while the close runs.
			close(release)
			release = nil
		}
		if err := <-deleted; err != nil {
			t.Fatalf("try %d: delete while a terminal starts: %v", try, err)
		}
		if release != nil {
			close(release)
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
		rt.cmds.Wait()
	}
}
