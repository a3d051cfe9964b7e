package sessionstest

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// StartCommand implements sandbox.CommandRunner: it plays spec.Cmd (see
// the package doc; a terminal's shell runs until killed), after the
// Runtime's gate for terminals (GateTerminals) for a TTY command.
func (s *Sandbox) StartCommand(_ context.Context, spec sandbox.CommandSpec) (sandbox.Command, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	if spec.TTY {
		s.rt.mu.Lock()
		gate := s.rt.ttyGate
		s.rt.mu.Unlock()
		hold(gate, "")
	}
	c := &command{out: make(chan sandbox.CommandOutput), killed: make(chan struct{})}
	f := strings.Fields(spec.Cmd)
	if len(f) > 0 && strings.HasPrefix(f[0], "pid=") { // the pid the sandbox tells
		c.pid, _ = strconv.Atoi(strings.TrimPrefix(f[0], "pid="))
		f = f[1:]
	}
	s.rt.cmds.Add(1)
	n := s.rt.cmdsLive.Add(1)
	for m := s.rt.cmdsMost.Load(); n > m && !s.rt.cmdsMost.CompareAndSwap(m, n); m = s.rt.cmdsMost.Load() {
	}
	go func() { // ends when the play does or the command is killed
		defer s.rt.cmds.Done()
		defer close(c.out)
		defer s.rt.cmdsLive.Add(-1)
		c.play(f)
	}()
	return c, nil
}

// command is a fake sandbox.Command.
type command struct {
	pid    int // 0: the sandbox does not tell it
	out    chan sandbox.CommandOutput
	killed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	exit   sandbox.CommandExit
}

// play runs the command line f until it ends or the command is killed.
func (c *command) play(f []string) {
	if len(f) == 0 { // a terminal: its shell runs until killed
		f = []string{"hang"}
	}
	arg := ""
	if len(f) > 1 {
		arg = f[1]
	}
	switch f[0] {
	case "out":
		n, _ := strconv.Atoi(arg)
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
		k, _ := strconv.Atoi(arg)
		c.setExit(k)
	default:
		<-c.killed
		c.setExit(137)
	}
}

func (c *command) setExit(code int) {
	c.mu.Lock()
	c.exit = sandbox.CommandExit{Code: code}
	c.mu.Unlock()
}

func (c *command) Output() <-chan sandbox.CommandOutput { return c.out }
func (c *command) PID(context.Context) int              { return c.pid }
func (c *command) Write([]byte) error                   { return nil }
func (c *command) CloseStdin() error                    { return nil }
func (c *command) Resize(int, int) error                { return nil }
func (c *command) Kill() error                          { c.once.Do(func() { close(c.killed) }); return nil }
func (c *command) Exit() sandbox.CommandExit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit
}
