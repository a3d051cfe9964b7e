package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"
)

// commandsAPI serves a session's commands and its terminal
// (/v1/sessions/{id}/commands, /terminal). Safe for concurrent use.
type commandsAPI struct {
	lookup
	ping     time.Duration // the terminal socket's ping interval
	conns    *wsconn.Group
	upgrader websocket.Upgrader
}

func (s *commandsAPI) route(v1 *echo.Group) {
	v1.POST("/sessions/:id/commands", s.runCommand)
	v1.GET("/sessions/:id/commands", s.listCommands)
	v1.GET("/sessions/:id/commands/:pid", s.getCommand)
	v1.POST("/sessions/:id/commands/:pid/stdin", s.commandStdin)
	v1.POST("/sessions/:id/commands/:pid/kill", s.killCommand)
	v1.POST("/sessions/:id/commands/:pid/resize", s.resizeCommand)
	v1.GET("/sessions/:id/terminal", s.terminal)
}

// The shell commands of a session: POST/GET /v1/sessions/{id}/commands,
// GET .../commands/{pid}, POST .../commands/{pid}/stdin and .../kill, and
// the terminal WebSocket GET /v1/sessions/{id}/terminal.

func (s *commandsAPI) runCommand(c echo.Context) error {
	var req api.RunCommandRequest
	sess, err := s.sessionRequest(c, &req)
	if err != nil {
		return err
	}
	if req.Cmd == "" && req.PTY == nil {
		return httperr.New(http.StatusBadRequest, "bad_request", "field cmd is required (or pty, for an interactive shell)")
	}
	timeout, err := seconds("timeout_s", req.TimeoutS)
	if err != nil {
		return err
	}
	cr := sessions.CommandRequest{Cmd: req.Cmd, Cwd: req.Cwd, Env: req.Envs, Timeout: timeout, Background: req.Background, Stdin: req.Stdin, Login: req.Login}
	if req.PTY != nil {
		cr.PTY = &sessions.TerminalSize{Cols: req.PTY.Cols, Rows: req.PTY.Rows}
	}
	if req.Background {
		// The command outlives the request: only its start is bounded by it.
		pid, err := sess.Commands().Start(c.Request().Context(), cr)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, api.CommandStarted{PID: pid})
	}
	st, err := sess.Commands().Run(c.Request().Context(), cr)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

func (s *commandsAPI) listCommands(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string][]sessions.CommandInfo{"commands": sess.Commands().List()})
}

// sessionCommand is the route's session and, after it, the route's pid
// (the session is looked up first: an unknown session fails as such).
func (s *commandsAPI) sessionCommand(c echo.Context) (*sessions.Session, int, error) {
	sess, err := s.session(c)
	if err != nil {
		return nil, 0, err
	}
	pid, err := strconv.Atoi(c.Param("pid"))
	if err != nil || pid <= 0 {
		return nil, 0, httperr.New(http.StatusNotFound, "command_not_found", "no command %q in this session", c.Param("pid"))
	}
	return sess, pid, nil
}

func (s *commandsAPI) getCommand(c echo.Context) error {
	sess, pid, err := s.sessionCommand(c)
	if err != nil {
		return err
	}
	st, err := sess.Commands().Get(pid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

func (s *commandsAPI) commandStdin(c echo.Context) error {
	sess, pid, err := s.sessionCommand(c)
	if err != nil {
		return err
	}
	var req api.CommandStdinRequest
	if err := s.decodeJSON(c, &req); err != nil {
		return err
	}
	if err := sess.Commands().Stdin(c.Request().Context(), pid, req.Data, req.EOF); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *commandsAPI) killCommand(c echo.Context) error {
	sess, pid, err := s.sessionCommand(c)
	if err != nil {
		return err
	}
	if err := sess.Commands().Kill(pid); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *commandsAPI) resizeCommand(c echo.Context) error {
	sess, pid, err := s.sessionCommand(c)
	if err != nil {
		return err
	}
	var req api.TerminalSize
	if err := s.decodeJSON(c, &req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), resizeWait)
	defer cancel()
	if err := sess.Commands().Resize(ctx, pid, req.Cols, req.Rows); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// Bounds of the terminal WebSocket.
const (
	terminalFrameBytes = 64 << 10 // largest frame a client may send
	// terminalInputWait bounds how long input may wait for a shell that
	// reads none (past the pseudo-terminal's and the launcher's 1 MiB):
	// then the terminal is closed, so that a client that pasted into a
	// shell that never reads, or left meanwhile, holds nothing.
	terminalInputWait = time.Minute
	// resizeWait bounds a command's resize waiting behind stdin it has
	// not read.
	resizeWait = 10 * time.Second
)

// terminal serves GET /v1/sessions/{id}/terminal?cols=&rows=: `bash -l`
// on a PTY in the session's sandbox. Binary frames carry the terminal's
// bytes both ways; a client's text frame is a JSON control
// (api.TerminalControl: resize); the server ends with a text frame
// {"type":"exit","exit_code":N}, then closes. The handler owns a reader
// and a writer goroutine and returns when both have exited; the shell is
// killed when the client leaves.
func (s *commandsAPI) terminal(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	size := func(name string) (int, error) {
		v := c.QueryParam(name)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return 0, httperr.New(http.StatusBadRequest, "bad_request", "%s must be an integer within 1..1000", name)
		}
		return n, nil
	}
	cols, err := size("cols")
	if err != nil {
		return err
	}
	rows, err := size("rows")
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(c.Request().Context(), time.Minute)
	login := c.QueryParam("login")
	if login != "" && login != "0" && login != "1" && login != "true" && login != "false" {
		cancel()
		return httperr.New(http.StatusBadRequest, "bad_request", "login must be 0, 1, true or false")
	}
	term, err := sess.Commands().Terminal(sctx, cols, rows, login == "1" || login == "true")
	cancel()
	if err != nil {
		return err
	}
	defer term.Close()
	conn, ctx, done, ok := s.conns.Accept(&s.upgrader, c.Response(), c.Request(), terminalFrameBytes)
	if !ok {
		return nil // the upgrader has written the error response
	}
	defer done()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		defer s.conns.Recover(&err)
		defer term.Close() // the client left: the shell ends, then the writer
		frames := s.conns.NewReader(conn, wsconn.Limits{Frame: terminalFrameBytes})
		defer frames.Close()
		return readTerminal(gctx, frames, term)
	})
	g.Go(func() (err error) {
		defer s.conns.Recover(&err)
		defer conn.Close() // unblocks the reader
		defer term.Close() // the client is gone: the shell ends, and input waiting for it
		return s.writeTerminal(gctx, conn, term)
	})
	_ = g.Wait()
	return nil
}

// readTerminal owns the terminal socket's reading side: input bytes to
// the shell, resizes. It reads at most wsconn.FrameRate frames a second.
func readTerminal(ctx context.Context, frames *wsconn.Reader, term *sessions.Terminal) error {
	for {
		kind, data, err := frames.Next(ctx)
		if err != nil {
			return err
		}
		if kind == websocket.BinaryMessage {
			wctx, cancel := context.WithTimeout(ctx, terminalInputWait)
			err := term.Write(wctx, data)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		var ctl api.TerminalControl
		if json.Unmarshal(data, &ctl) != nil || ctl.Type != "resize" {
			continue // not a control this server knows: ignored
		}
		_ = term.Resize(ctl.Cols, ctl.Rows) // a bad size is ignored
	}
}

// writeTerminal owns the writing side: the shell's output, pings, and at
// its end the exit frame and the close.
func (s *commandsAPI) writeTerminal(ctx context.Context, conn *websocket.Conn, term *sessions.Terminal) error {
	ping := time.NewTicker(s.ping)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			term.Close()
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "gateway shutting down"), time.Now().Add(time.Second))
			return ctx.Err()
		case o, ok := <-term.Output():
			_ = conn.SetWriteDeadline(time.Now().Add(wsconn.WriteTimeout))
			if !ok {
				code := term.Exit()
				if err := conn.WriteJSON(api.TerminalControl{Type: "exit", ExitCode: &code}); err != nil {
					return err
				}
				_ = conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, "the shell ended"), time.Now().Add(time.Second))
				return wsconn.ErrSessionEnded
			}
			if err := conn.WriteMessage(websocket.BinaryMessage, o.Data); err != nil {
				return err
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsconn.WriteTimeout)); err != nil {
				return err
			}
		}
	}
}
