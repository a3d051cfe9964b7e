package client

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/api"
)

// Command wire types (package api).
type (
	// Command is the wire type api.Command: a command with its output so
	// far, or a foreground command's result.
	Command = api.Command
	// CommandInfo is the wire type api.CommandInfo.
	CommandInfo = api.CommandInfo
)

// CommandOptions are the choices of a shell command.
type CommandOptions struct {
	// Cwd is its working directory: relative to the workspace
	// (/home/user), or absolute under it; "" is the workspace.
	Cwd string
	// Envs are added to the session's environment (the same name policy).
	Envs map[string]string
	// Timeout kills the command (its whole process group) once it has
	// run this long: then ExitCode is -1 and TimedOut is set. 0: the
	// gateway's execution timeout in the foreground, none in the
	// background.
	Timeout time.Duration
	// Stdin is written to its stdin first. A foreground command's stdin
	// is then closed; a background one's stays open (SendStdin).
	Stdin string
	// PTY runs it on a pseudo-terminal of this size (cmd "": an
	// interactive bash); its output is stdout only, Resize changes it.
	PTY *api.TerminalSize
	// Login runs a login shell (bash -l), which reads the workspace's
	// start-up files.
	Login bool
}

func (o CommandOptions) request(cmd string, background bool) api.RunCommandRequest {
	r := api.RunCommandRequest{Cmd: cmd, Cwd: o.Cwd, Envs: o.Envs, Background: background, Stdin: o.Stdin, PTY: o.PTY, Login: o.Login}
	if o.Timeout != 0 {
		r.TimeoutS = api.Ptr(o.Timeout.Seconds())
	}
	return r
}

// RunCommand runs cmd as `bash -lc cmd` in the session's sandbox (same
// uid, limits, network and workspace as its kernels) and waits for its
// end: its output, exit code and duration. A command killed at its
// timeout is no error (TimedOut, ExitCode -1). ErrTooManyRequests when
// the session runs as many commands as allowed.
func (c *Client) RunCommand(ctx context.Context, sessionID, cmd string, opts CommandOptions) (*Command, error) {
	var out Command
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "commands"), json: opts.request(cmd, false)}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return &out, nil
}

// CommandHandle is a background command (StartCommand). Its methods are
// safe for concurrent use.
type CommandHandle struct {
	c         *Client
	sessionID string
	// PID is the command's process id in the sandbox (on the local
	// runtime, the session's own number: see api.CommandInfo).
	PID int
}

// StartCommand starts cmd in the background and returns at once; its
// output streams as command events on the session's WebSocket (Connect)
// and is kept for Output. Its stdin stays open until SendStdin with eof.
func (c *Client) StartCommand(ctx context.Context, sessionID, cmd string, opts CommandOptions) (*CommandHandle, error) {
	var out api.CommandStarted
	if err := c.do(ctx, request{method: http.MethodPost, path: sessionPath(sessionID, "commands"), json: opts.request(cmd, true)}, &out, http.StatusCreated); err != nil {
		return nil, err
	}
	return &CommandHandle{c: c, sessionID: sessionID, PID: out.PID}, nil
}

// Command returns a handle of command pid of the session (one ListCommands
// shows).
func (c *Client) Command(sessionID string, pid int) *CommandHandle {
	return &CommandHandle{c: c, sessionID: sessionID, PID: pid}
}

// ListCommands lists the session's running commands and the last
// finished ones.
func (c *Client) ListCommands(ctx context.Context, sessionID string) ([]CommandInfo, error) {
	var out struct {
		Commands []CommandInfo `json:"commands"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: sessionPath(sessionID, "commands")}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return out.Commands, nil
}

func (h *CommandHandle) path(rest ...string) string {
	return sessionPath(h.sessionID, append([]string{"commands", strconv.Itoa(h.PID)}, rest...)...)
}

// Output returns the command's state and its output so far.
// ErrNotFound once the gateway has forgotten it (it keeps the last 64
// finished commands).
func (h *CommandHandle) Output(ctx context.Context) (*Command, error) {
	var out Command
	if err := h.c.do(ctx, request{method: http.MethodGet, path: h.path()}, &out, http.StatusOK); err != nil {
		return nil, err
	}
	return &out, nil
}

// SendStdin writes data to the command's stdin, then closes it if eof.
// ErrConflict once the command has ended.
func (h *CommandHandle) SendStdin(ctx context.Context, data string, eof bool) error {
	return h.c.do(ctx, request{method: http.MethodPost, path: h.path("stdin"), json: api.CommandStdinRequest{Data: data, EOF: eof}}, nil, http.StatusNoContent)
}

// Kill kills the command's process group (SIGKILL). It does not wait for
// its end (Wait does).
func (h *CommandHandle) Kill(ctx context.Context) error {
	return h.c.do(ctx, request{method: http.MethodPost, path: h.path("kill")}, nil, http.StatusNoContent)
}

// Resize changes the size of a PTY command's pseudo-terminal.
// ErrConflict once the command has ended.
func (h *CommandHandle) Resize(ctx context.Context, cols, rows int) error {
	return h.c.do(ctx, request{method: http.MethodPost, path: h.path("resize"), json: api.TerminalSize{Cols: cols, Rows: rows}}, nil, http.StatusNoContent)
}

// Wait polls the command (10 ms, growing to 500 ms between polls) until
// it has ended, or ctx ends, and returns it with its output.
func (h *CommandHandle) Wait(ctx context.Context) (*Command, error) {
	delay := 10 * time.Millisecond
	for {
		out, err := h.Output(ctx)
		if err != nil || !out.Running {
			return out, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
