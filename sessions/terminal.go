package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Terminal is an interactive login shell on a PTY in the session's
// sandbox (Commands.Terminal). Read Output until it is closed; Close ends
// it.
type Terminal struct {
	m       *Commands
	c       sandbox.Command
	release func()
	once    sync.Once
	// writing is held by the one input write in flight (Write): a shell
	// that reads nothing keeps one goroutine and one frame waiting.
	writing chan struct{}
}

// Terminal starts an interactive bash (a login shell, `bash -l`, with
// login) on a PTY of cols × rows (0: 80 × 24) in the workspace, at most
// MaxTerminals at once. The caller must read Output until it is closed
// and Close the terminal; the session's close kills it.
func (m *Commands) Terminal(ctx context.Context, cols, rows int, login bool) (*Terminal, error) {
	cr, spec, err := m.runner(sandbox.CommandSpec{TTY: true, Cols: cols, Rows: rows, Login: login})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrClosed
	case len(m.terminals) >= MaxTerminals:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w (at most %d terminals)", ErrTooManyCommands, MaxTerminals)
	}
	t := &Terminal{m: m, writing: make(chan struct{}, 1)}
	m.terminals[t] = struct{}{} // holds the place while it starts
	m.mu.Unlock()
	forget := func() {
		m.mu.Lock()
		delete(m.terminals, t)
		m.mu.Unlock()
	}
	c, release, err := m.launch(ctx, cr, spec, "start terminal")
	if err != nil {
		forget()
		return nil, err
	}
	m.mu.Lock()
	t.c, t.release = c, release
	closed := m.closed
	m.mu.Unlock()
	if closed {
		_ = c.Kill()
	}
	return t, nil
}

// Output is the terminal's output; it is closed when the shell has
// ended (Exit is known then).
func (t *Terminal) Output() <-chan sandbox.CommandOutput { return t.c.Output() }

// Write sends input (keys) to the terminal, in order. The shell takes it
// through its pseudo-terminal and the launcher's buffer (1 MiB); past
// that the write waits for the shell to read, in a goroutine of the
// session's commands, and Write returns at ctx's end: the caller (a
// client that left, a paste the shell never reads) then closes the
// terminal, which ends the write. One goroutine at a time may call it.
func (t *Terminal) Write(ctx context.Context, p []byte) error {
	t.m.s.Touch()
	select {
	case t.writing <- struct{}{}: // the previous write is done
	case <-ctx.Done():
		return fmt.Errorf("sessions: terminal input: the shell is not reading: %w", ctx.Err())
	}
	if err := t.m.inFlight(ctx, t.writing, nil, func() error { return t.c.Write(p) }); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return fmt.Errorf("sessions: terminal input: the shell is not reading: %w", err)
		}
		return err
	}
	return nil
}

// Resize changes the terminal's size.
func (t *Terminal) Resize(cols, rows int) error { return t.c.Resize(cols, rows) }

// Exit is the shell's exit status, once Output is closed.
func (t *Terminal) Exit() int { return t.c.Exit().Code }

// Close kills the shell (every process of its session), reads what
// remains of its output and gives its place back. Idempotent.
func (t *Terminal) Close() {
	t.once.Do(func() {
		_ = t.c.Kill()
		for range t.c.Output() {
		}
		t.release()
		t.m.mu.Lock()
		delete(t.m.terminals, t)
		t.m.mu.Unlock()
	})
}
