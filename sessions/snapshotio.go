package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// Streams between the gateway and a script in the sandbox (snapshots'
// workspace archives): bytes only, never decoded here.

// maxScriptComplaint bounds what a script's stderr may tell.
const maxScriptComplaint = 2 << 10

// pipeOut runs script in the sandbox and copies its stdout to w until it
// ends. An exit code outside ok, a failed write (w's error: the script is
// killed) or ctx's end is an error naming op.
func (m *Commands) pipeOut(ctx context.Context, op, script string, w io.Writer, ok ...int) error {
	c, release, err := m.pipe(ctx, op, script)
	if err != nil {
		return err
	}
	defer release()
	_ = c.CloseStdin()
	var werr error
	complaint := m.drain(ctx, c, func(p []byte) {
		if werr == nil {
			if _, werr = w.Write(p); werr != nil {
				_ = c.Kill()
			}
		}
	})
	if werr != nil {
		return fmt.Errorf("sessions: %s: %w", op, werr)
	}
	return pipeEnd(ctx, op, c.Exit(), complaint, ok)
}

// pipeIn runs script in the sandbox with r as its stdin, and waits for it
// to end; its stdout is dropped. Errors as pipeOut's (a read of r that
// fails kills the script).
func (m *Commands) pipeIn(ctx context.Context, op, script string, r io.Reader, ok ...int) error {
	c, release, err := m.pipe(ctx, op, script)
	if err != nil {
		return err
	}
	defer release()
	fed := make(chan error, 1)
	go func() { // ends when r is read, or once the script is gone (Write fails)
		buf := make([]byte, 64<<10)
		for {
			n, rerr := r.Read(buf)
			if n > 0 {
				if err := c.Write(buf[:n]); err != nil {
					fed <- nil // the script ended: its exit says why
					return
				}
			}
			if errors.Is(rerr, io.EOF) {
				fed <- c.CloseStdin()
				return
			}
			if rerr != nil {
				_ = c.Kill()
				fed <- rerr
				return
			}
		}
	}()
	complaint := m.drain(ctx, c, func([]byte) {})
	if ferr := <-fed; ferr != nil && c.Exit().Code != 0 {
		return fmt.Errorf("sessions: %s: %w", op, ferr)
	}
	return pipeEnd(ctx, op, c.Exit(), complaint, ok)
}

// pipe starts script for pipeOut and pipeIn; release ends its hold.
func (m *Commands) pipe(ctx context.Context, op, script string) (sandbox.Command, func(), error) {
	cr, spec, err := m.runner(sandbox.CommandSpec{Cmd: script})
	if err != nil {
		return nil, nil, err
	}
	done, err := m.probe(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	c, release, err := m.launch(ctx, cr, spec, op)
	if err != nil {
		done()
		return nil, nil, err
	}
	return c, func() { release(); done() }, nil
}

// drain reads c's output until it ends, giving stdout to out and keeping
// the start of stderr, which it returns; ctx's end kills c.
func (m *Commands) drain(ctx context.Context, c sandbox.Command, out func([]byte)) string {
	var complaint strings.Builder
	stop := ctx.Done()
	for {
		select {
		case o, open := <-c.Output():
			if !open {
				return complaint.String()
			}
			if o.Stream == sandbox.Stdout {
				out(o.Data)
			} else if room := maxScriptComplaint - complaint.Len(); room > 0 {
				complaint.Write(o.Data[:min(room, len(o.Data))])
			}
		case <-stop:
			_ = c.Kill()
			stop = nil
		}
	}
}

func pipeEnd(ctx context.Context, op string, ex sandbox.CommandExit, complaint string, ok []int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessions: %s: %w", op, err)
	}
	if ex.Code == 0 || slices.Contains(ok, ex.Code) {
		return nil
	}
	return fmt.Errorf("sessions: %s: exit %d: %s", op, ex.Code, truncateUTF8(strings.TrimSpace(complaint), maxScriptComplaint))
}
