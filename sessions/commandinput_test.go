package sessions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// TestResizeBehindStdinNotRead: a pseudo-terminal's resize travels on
// the stdin channel, so it waits behind a write the command has not
// read; it must end with its context (it blocked for good), one at a
// time may wait, and it says the command ended once killed.
func TestResizeBehindStdinNotRead(t *testing.T) {
	m := newManager(t, sessions.Config{})
	s := create(t, m, "t")
	cmds := s.Commands()
	// Raw mode: a canonical terminal drops what does not fit its line
	// rather than blocking the writer.
	pid, err := cmds.Start(context.Background(), sessions.CommandRequest{Cmd: "stty raw -echo; echo raw; exec sleep 1000", Background: true,
		PTY: &sessions.TerminalSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		st, err := cmds.Get(pid)
		return err == nil && strings.Contains(st.Stdout, "raw")
	}, "the terminal in raw mode")
	if err := cmds.Resize(context.Background(), pid, 100, 30); err != nil {
		t.Fatalf("a resize with nothing in its way: %v", err)
	}
	if err := cmds.Resize(context.Background(), pid, 0, 30); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("a zero width: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = cmds.Stdin(ctx, pid, strings.Repeat("x", 2<<20), false)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write the command does not read: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = cmds.Resize(ctx, pid, 120, 40)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a resize behind it must end with its context: %v", err)
	}
	if err := cmds.Resize(context.Background(), pid, 120, 40); !errors.Is(err, sessions.ErrStdinBusy) {
		t.Fatalf("a second resize while one waits: %v", err)
	}
	if err := cmds.Kill(pid); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		return errors.Is(cmds.Resize(context.Background(), pid, 80, 24), sessions.ErrCommandEnded)
	}, "the killed command's resize to say it ended")
}
