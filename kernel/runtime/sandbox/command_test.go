package sandbox

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// TestCommandSetCloseWithDoneContext: a sandbox's Close does its work even
// with a done ctx: an empty set (or one whose commands end) closes
// without error, every time (the wait must not lose a race to ctx), and
// refuses new commands afterwards.
func TestCommandSetCloseWithDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 200; i++ {
		var s CommandSet
		if i%2 == 1 { // a slot that ends while Close waits
			sl, err := s.Begin()
			if err != nil {
				t.Fatal(err)
			}
			go sl.End()
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if _, err := s.Begin(); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: Begin after Close: %v", i, err)
		}
	}
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// TestKilledCommandAbandonsHeldOutput: when a process that outlived the
// kill holds the command's output open, the command still ends
// AbandonAfter after the kill (Abandon closes its reading end), as
// killed; one whose output ends in time is never abandoned.
func TestKilledCommandAbandonsHeldOutput(t *testing.T) {
	for _, held := range []bool{true, false} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var abandoned atomic.Int32
		c := NewCommand(CommandTransport{
			In: nopWriteCloser{}, Out: r,
			Kill:         func(int) {}, // reaches nothing: the holder lives on
			Wait:         func() string { return "" },
			Abandon:      func() { abandoned.Add(1); _ = r.Close() },
			AbandonAfter: 300 * time.Millisecond,
		})
		if err := c.Kill(); err != nil {
			t.Fatal(err)
		}
		if !held {
			w.Close() // the output ends on its own, in time
		}
		select {
		case _, open := <-c.Output():
			if open {
				t.Fatal("output from nowhere")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("held=%v: the killed command never ended", held)
		}
		if got := c.Exit().Reason; got != "killed" {
			t.Errorf("held=%v: exit reason %q", held, got)
		}
		time.Sleep(500 * time.Millisecond) // past AbandonAfter
		if want := map[bool]int32{true: 1, false: 0}[held]; abandoned.Load() != want {
			t.Errorf("held=%v: abandoned %d times, want %d", held, abandoned.Load(), want)
		}
		w.Close()
		r.Close()
	}
}

// TestCommandPID: PID is what the launcher's 'p' frame tells, waited for;
// 0 once the command ended without telling, and at once where the
// command's pid namespace is its own.
func TestCommandPID(t *testing.T) {
	frame := func(kind byte, body string) []byte {
		return append([]byte{kind, 0, 0, 0, byte(len(body))}, body...)
	}
	start := func(own bool) (Command, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return NewCommand(CommandTransport{In: nopWriteCloser{}, Out: r, Kill: func(int) {}, Wait: func() string { return "" }, OwnPIDNamespace: own}), w
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, w := start(false)
	told := make(chan int, 1)
	go func() { told <- c.PID(ctx) }()
	if _, err := w.Write(append(frame('p', "4242"), frame('x', "0")...)); err != nil {
		t.Fatal(err)
	}
	if pid := <-told; pid != 4242 {
		t.Fatalf("the told pid: %d", pid)
	}
	for range c.Output() {
	}

	// Output before any pid (a cwd the launcher could not enter): PID
	// answers 0 before the output is read, as sessions asks it.
	c, w = start(false)
	w.Write(append(frame('e', "glassroom: cwd /x: No such file or directory\n"), frame('x', "1")...))
	if pid := c.PID(ctx); pid != 0 || ctx.Err() != nil {
		t.Fatalf("a command that told none: %d (%v)", pid, ctx.Err())
	}
	for range c.Output() {
	}

	c, _ = start(true) // tells nothing yet, and need not
	if pid := c.PID(ctx); pid != 0 {
		t.Fatalf("a command in its own pid namespace: %d", pid)
	}
	_ = c.Kill()
}
