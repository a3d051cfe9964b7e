package sessions

// What a client sends a running command: its stdin (a terminal's keys),
// its kill, and a pseudo-terminal's size.

import (
	"context"
	"errors"
	"fmt"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Stdin writes data to command pid's stdin, after its initial stdin, and
// then ends it with eof. It blocks while the command reads none (1 MiB
// waits in the sandbox), until ctx ends.
func (m *Commands) Stdin(ctx context.Context, pid int, data string, eof bool) error {
	cmd, err := m.lookup(pid)
	if err != nil {
		return err
	}
	select {
	case <-cmd.stdinDone:
	case <-cmd.done:
		return ErrCommandEnded
	case <-ctx.Done():
		return fmt.Errorf("sessions: command stdin: %w", ctx.Err())
	}
	m.s.Touch()
	select {
	case cmd.stdinSlot <- struct{}{}:
	default:
		return ErrStdinBusy
	}
	// The write waits for the command to read (the pipe and the
	// launcher's buffer are full while it does not); the request returns
	// at its context's end.
	err = m.inFlight(ctx, cmd.stdinSlot, cmd.done, func() error { return writeStdin(cmd.c, data, eof) })
	switch {
	case errors.Is(err, errEnded):
		return ErrCommandEnded
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("sessions: command stdin: the command has not read it yet (the write goes on; the next waits): %w", err)
	}
	return err
}

// errEnded is inFlight's error when ended closed first.
var errEnded = errors.New("sessions: ended")

// inFlight runs write, which may block until a process reads, in a
// goroutine of m's that holds slot (taken by the caller, given back when
// write returns): a session's close kills the process first, which ends
// write, then waits for it. It returns write's error, errEnded once ended
// is closed (nil: never), or ctx's error; write goes on after a return.
func (m *Commands) inFlight(ctx context.Context, slot chan struct{}, ended <-chan struct{}, write func() error) error {
	done := make(chan error, 1)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		// The slot is given back before the result is: a caller that
		// saw its write end may write again at once.
		err := func() error {
			defer func() { <-slot }()
			return write()
		}()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ended:
		// Both may be ready (a stdin closed at once ends a cat): the
		// write's own result wins, so a write that succeeded is no
		// "ended" error.
		select {
		case err := <-done:
			return err
		default:
			return errEnded
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeStdin writes data to c's stdin, then closes it if eof.
func writeStdin(c sandbox.Command, data string, eof bool) error {
	if data != "" {
		if err := c.Write([]byte(data)); err != nil {
			return fmt.Errorf("%w: %w", ErrCommandEnded, err)
		}
	}
	if eof {
		if err := c.CloseStdin(); err != nil {
			return fmt.Errorf("%w: %w", ErrCommandEnded, err)
		}
	}
	return nil
}

// Kill kills command pid's process group (SIGKILL); nothing for one that
// has ended. It does not wait for the end (its exited event says it).
func (m *Commands) Kill(pid int) error {
	cmd, err := m.lookup(pid)
	if err != nil {
		return err
	}
	return cmd.c.Kill()
}

// Resize changes the size of command pid's pseudo-terminal (cols, rows
// within 1..sandbox.MaxTerminalSize). ErrCommandEnded once it ended; an
// invalid error for a command without one; ErrStdinBusy while an earlier
// resize still waits. The resize travels on the stdin channel, so it
// waits behind a stdin write the command has not read, until ctx ends.
func (m *Commands) Resize(ctx context.Context, pid, cols, rows int) error {
	cmd, err := m.lookup(pid)
	if err != nil {
		return err
	}
	if cmd.req.PTY == nil {
		return invalid("command %d has no pseudo-terminal", pid)
	}
	select {
	case <-cmd.done:
		return ErrCommandEnded
	case cmd.resizeSlot <- struct{}{}:
	default:
		return ErrStdinBusy
	}
	err = m.inFlight(ctx, cmd.resizeSlot, cmd.done, func() error { return cmd.c.Resize(cols, rows) })
	var se *sandbox.SpecError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return invalid("%s", se.Public())
	case errors.Is(err, errEnded), errors.Is(err, sandbox.ErrCommandDone):
		return ErrCommandEnded
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return fmt.Errorf("sessions: resize command: waiting behind stdin the command has not read: %w", err)
	}
	return fmt.Errorf("sessions: resize command: %w", err)
}
