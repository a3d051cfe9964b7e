package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
)

type wsUpgrader struct{ websocket.Upgrader }

// newUpgrader allows same-origin browsers, listed origins, and clients
// that send no Origin (scripts, agents).
func newUpgrader(allowed []string) wsUpgrader {
	set := map[string]bool{}
	for _, o := range allowed {
		set[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	return wsUpgrader{websocket.Upgrader{
		ReadBufferSize: 16 << 10, WriteBufferSize: 16 << 10,
		CheckOrigin: func(r *http.Request) bool {
			origin := r.Header.Get("Origin")
			if origin == "" {
				return true
			}
			u, err := url.Parse(origin)
			if err != nil {
				return false
			}
			return strings.EqualFold(u.Host, r.Host) || set[strings.ToLower(origin)]
		},
	}}
}

// clientFrame is any frame a WebSocket client may send.
type clientFrame struct {
	Type        string   `json:"type"`
	ID          string   `json:"id"`
	Code        *string  `json:"code"`
	Timeout     *float64 `json:"timeout_s"`
	Value       *string  `json:"value"`
	Since       *int64   `json:"since"`
	CursorPos   *int     `json:"cursor_pos"`
	DetailLevel int      `json:"detail_level"`
}

// rejected is sent for a frame the server cannot act on.
type rejected struct {
	Type    string `json:"type"`
	ID      string `json:"id,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

const (
	wsWriteTimeout = 10 * time.Second
	// wsFrameRate is how many frames per second a client may send,
	// sustained (the burst is the same). A faster client is not refused:
	// the server stops reading its socket until the rate allows, so TCP
	// slows the client down.
	wsFrameRate = 200
	// wsPendingExecutes is how many executes a connection may have waiting
	// for room in the session's queue before its socket stops being read.
	wsPendingExecutes = 8
)

// websocket relays a session's events to one client and the client's
// execute, interrupt, input_reply and resume frames to the session. The
// handler owns two goroutines, a reader and a writer, and returns when
// both have exited. A client that disconnects does not stop its executions.
func (s *Server) websocket(c echo.Context) error {
	sess, err := s.session(c)
	if err != nil {
		return err
	}
	since := sess.LastSeq()
	if v := c.QueryParam("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return newError(http.StatusBadRequest, "bad_request", "since must be a non-negative integer")
		}
		since = n
	}
	release, err := sess.Attach()
	if err != nil {
		return err
	}
	defer release()
	conn, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has written the error response
	}
	s.wsConns.Add(1)
	defer s.wsConns.Done()
	defer conn.Close()
	conn.SetReadLimit(int64(s.mgr.Config().MaxCodeBytes) + 64<<10)
	sess.Touch()

	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	out := make(chan any, 64)     // frames for the writer besides events
	resume := make(chan int64, 1) // resubscribe requests for the writer
	execs := make(chan sessions.ExecRequest, wsPendingExecutes)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		defer s.recoverWS(&err)
		in := newIntrospector(gctx, sess, out, s.recoverWS)
		defer in.close()
		defer close(execs)
		return s.wsRead(gctx, conn, sess, wsInputs{out: out, resume: resume, execs: execs, introspect: in})
	})
	g.Go(func() (err error) {
		defer s.recoverWS(&err)
		return s.wsSubmit(gctx, sess, execs, out)
	})
	g.Go(func() (err error) {
		defer s.recoverWS(&err)
		defer conn.Close() // unblocks the reader
		return s.wsWrite(gctx, conn, sess, since, out, resume)
	})
	_ = g.Wait()
	return nil
}

// wsInputs are where the reader hands a connection's frames.
type wsInputs struct {
	out        chan<- any                  // rejections, for the writer
	resume     chan int64                  // resubscribe requests, for the writer
	execs      chan<- sessions.ExecRequest // executes, for the submitter
	introspect *introspector
}

// wsSubmit owns the hand-off of a connection's executes to the session, in
// order: while the session's queue is full it waits (and, once execs is
// full, the reader stops reading the socket). It ends when the reader
// closes execs or the connection ends.
func (s *Server) wsSubmit(ctx context.Context, sess *sessions.Session, execs <-chan sessions.ExecRequest, out chan<- any) error {
	for req := range execs {
		if _, err := sess.SubmitWait(ctx, req); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			ae := toAPIError(err)
			send(ctx, out, rejected{Type: "rejected", ID: req.ID, Code: ae.Code, Message: ae.Message})
		}
	}
	return nil
}

// recoverWS turns a panic in a WebSocket goroutine into an error that ends
// this connection only.
func (s *Server) recoverWS(err *error) {
	if r := recover(); r != nil {
		s.log.Error().Interface("panic", r).Msg("websocket handler panicked")
		*err = wsError("internal error")
	}
}

// wsRead owns the connection's reading side. It reads at most wsFrameRate
// frames a second; past that it waits before reading on, so a fast client
// is slowed by TCP backpressure, never dropped.
func (s *Server) wsRead(ctx context.Context, conn *websocket.Conn, sess *sessions.Session, in wsInputs) error {
	defer send(ctx, in.out, nil) // tells the writer the client is gone
	limit := rate.NewLimiter(wsFrameRate, wsFrameRate)
	for {
		if err := limit.Wait(ctx); err != nil {
			return err
		}
		_, data, err := conn.ReadMessage()
		if err != nil {
			return err
		}
		var f clientFrame
		if err := json.Unmarshal(data, &f); err != nil {
			send(ctx, in.out, rejected{Type: "rejected", Code: "bad_frame", Message: "frame is not a JSON object: " + err.Error()})
			continue
		}
		if r := s.handleFrame(ctx, sess, f, in); r != nil {
			send(ctx, in.out, *r)
		}
	}
}

func (s *Server) handleFrame(ctx context.Context, sess *sessions.Session, f clientFrame, in wsInputs) *rejected {
	reject := func(err error) *rejected {
		ae := toAPIError(err)
		return &rejected{Type: "rejected", ID: f.ID, Code: ae.Code, Message: ae.Message}
	}
	switch f.Type {
	case "execute":
		if f.Code == nil {
			return &rejected{Type: "rejected", ID: f.ID, Code: "bad_frame", Message: "execute needs code"}
		}
		if f.ID == "" {
			return &rejected{Type: "rejected", Code: "bad_frame", Message: "execute needs an id"}
		}
		timeout, err := seconds("timeout_s", f.Timeout)
		if err != nil {
			return reject(err)
		}
		select {
		case in.execs <- sessions.ExecRequest{ID: f.ID, Code: *f.Code, Timeout: timeout, AllowStdin: true}:
		case <-ctx.Done():
		}
	case "interrupt":
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := sess.Interrupt(ictx); err != nil {
			return reject(err)
		}
	case "input_reply":
		if f.Value == nil {
			return &rejected{Type: "rejected", ID: f.ID, Code: "bad_frame", Message: "input_reply needs value"}
		}
		if err := sess.Input(f.ID, *f.Value); err != nil {
			return reject(err)
		}
	case "resume":
		if f.Since == nil || *f.Since < 0 {
			return &rejected{Type: "rejected", ID: f.ID, Code: "bad_frame", Message: "resume needs since >= 0"}
		}
		select {
		case <-in.resume:
		default:
		}
		in.resume <- *f.Since
	case "complete", "inspect":
		if f.Code == nil || f.CursorPos == nil || f.ID == "" {
			return &rejected{Type: "rejected", ID: f.ID, Code: "bad_frame", Message: f.Type + " needs id, code and cursor_pos"}
		}
		in.introspect.start(f)
	default:
		return &rejected{Type: "rejected", ID: f.ID, Code: "unknown_type",
			Message: "unknown frame type " + strconv.Quote(f.Type) + "; expected execute, interrupt, input_reply, resume, complete or inspect"}
	}
	return nil
}

func send(ctx context.Context, out chan<- any, v any) {
	select {
	case out <- v:
	case <-ctx.Done():
	}
}

// wsWrite owns the connection's writing side: events, rejections and pings.
func (s *Server) wsWrite(ctx context.Context, conn *websocket.Conn, sess *sessions.Session, since int64, out <-chan any, resume <-chan int64) error {
	sub := sess.Subscribe(since)
	defer func() { sub.Close() }()
	ping := time.NewTicker(s.cfg.WSPingInterval)
	defer ping.Stop()
	write := func(v any) error {
		_ = conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
		return conn.WriteJSON(v)
	}
	// A snapshot of the kernel state; its seq is where this stream resumes
	// from (every later event has a larger one).
	info := sess.Info()
	if err := write(sessions.Event{Seq: since, Type: sessions.EventKernel, State: string(info.State)}); err != nil {
		return err
	}
	lastSent := since
	for {
		select {
		case <-ctx.Done():
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "gateway shutting down"), time.Now().Add(time.Second))
			return ctx.Err()
		case v := <-out:
			if v == nil {
				return errClientGone
			}
			if err := write(v); err != nil {
				return err
			}
		case n := <-resume:
			sub.Close()
			sub = sess.Subscribe(n)
			lastSent = n
		case ev, ok := <-sub.C:
			if !ok {
				if sub.Lagged() { // fell behind: replay from the backlog
					sub = sess.Subscribe(lastSent)
					continue
				}
				_ = conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, "session ended"), time.Now().Add(time.Second))
				return errSessionEnded
			}
			if ev.Seq <= lastSent {
				continue
			}
			if err := write(ev); err != nil {
				return err
			}
			lastSent = ev.Seq
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteTimeout)); err != nil {
				return err
			}
		}
	}
}

type wsError string

func (e wsError) Error() string { return string(e) }

const (
	errClientGone   = wsError("client disconnected")
	errSessionEnded = wsError("session ended")
)
