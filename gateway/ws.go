package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"
)

// wsExecute is an execute frame on its way to the submitter, which finds
// its context (starting a language's default context on first use) in
// order.
type wsExecute struct {
	req               sessions.ExecRequest
	context, language string
}

// rejection is the rejected frame answering frame id with err's code.
func rejection(id string, err error) api.RejectedFrame {
	ae := httperr.Of(err)
	return api.RejectedFrame{Type: api.EventRejected, ID: id, Code: ae.Code, Message: ae.Message}
}

// badFrame is the rejected frame of a malformed frame.
func badFrame(id, code, message string) *api.RejectedFrame {
	return &api.RejectedFrame{Type: api.EventRejected, ID: id, Code: code, Message: message}
}

// commSend is a client's comm frame, checked by the reader, for the
// writer to send: the writer sends it and writes its answer (comm_sent or
// rejected) before anything else, so that the answer precedes every
// message the kernel sends while handling it (the side stream is the
// writer's too).
type commSend struct {
	id, msgType       string
	context           string // where a comm_open goes (api.CommFrame.Context)
	content, metadata json.RawMessage
	buffers           [][]byte
	release           func() // gives back the large-frame budget the frame holds, once sent (or dropped)
}

// send sends c to the kernel for owner and returns its answer frame.
func (c commSend) send(sess *sessions.Session, owner string) any {
	defer c.release()
	var named struct {
		CommID string `json:"comm_id"`
	}
	_ = json.Unmarshal(c.content, &named) // a bad content is SendCommID's to refuse
	k, err := sess.Contexts().CommKernel(named.CommID, c.context)
	if err != nil {
		return rejection(c.id, err)
	}
	msgID, err := k.Comms().SendCommID(owner, c.id, c.msgType, c.content, c.metadata, c.buffers)
	if err != nil {
		return rejection(c.id, err)
	}
	return api.CommSentFrame{Type: api.EventCommSent, ID: c.id, MsgID: msgID}
}

// wsPendingExecutes is how many executes a connection may have waiting for
// room in the session's queue before its socket stops being read.
const wsPendingExecutes = 8

// sessionSocket serves the native WebSocket, GET /v1/sessions/{id}/ws. Safe for
// concurrent use; each connection's state is in its handler's goroutines.
type sessionSocket struct {
	session  func(echo.Context) (*sessions.Session, error) // the session a route names, of the request's tenant
	mgr      *sessions.Manager
	conns    *wsconn.Group // the gateway's live WebSockets
	upgrader websocket.Upgrader
	ping     time.Duration // how often an idle connection is pinged
}

// serve relays a session's events to one client and the client's
// execute, interrupt, input_reply and resume frames to the session. The
// handler owns three goroutines, a reader, a submitter and a writer, and
// returns when all have exited. A client that disconnects does not stop
// its executions.
//
// Comms (widgets) of every context go both ways beside the queue (a
// client's comm_msg and comm_close to the kernel whose comm they name, a
// comm_open to the frame's context): every message of a kernel's side
// stream (comm_open, comm_msg,
// comm_close, a comm handler's output and status) goes to every client
// as a comm frame, before the events the kernel sent after it; a
// client's comm frame goes to the kernel (Session.SendCommID, as this
// connection's owner identity: the comms it opens are its own, closed
// when it ends) with the
// frame's id as its msg_id when that is free (else a new one), and is
// answered comm_sent with the kernel msg_id, or rejected (bad_comm,
// comm_not_owned, comm_limit, rate_limited), before any frame of what
// the kernel sends while handling it (the writer sends it); a comm_info frame is
// answered comm_info_reply (the introspector's, as complete). Comm
// frames are not in the event log: a client that lags or reconnects
// loses them, and asks comm_info and the widgets' state again.
func (r *sessionSocket) serve(c echo.Context) error {
	sess, err := r.session(c)
	if err != nil {
		return err
	}
	since := sess.LastSeq()
	if v := c.QueryParam("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return httperr.New(http.StatusBadRequest, "bad_request", "since must be a non-negative integer")
		}
		since = n
	}
	release, err := sess.Attach()
	if err != nil {
		return err
	}
	defer release()
	// A frame may be up to the code limit plus 64 KiB; a comm frame, up to
	// what its MaxCommBytes need in base64, when the gateway's budget for
	// large frames allows (the tenant holds at most its part of it).
	cfg := r.mgr.Config()
	lim := wsconn.Limits{Frame: int64(cfg.MaxCodeBytes) + 64<<10, Large: wsconn.LargeFrameSize(cfg.MaxCommBytes), Owner: tenant.Of(c)}
	conn, ctx, done, ok := r.conns.Accept(&r.upgrader, c.Response(), c.Request(), lim.Frame)
	if !ok {
		return nil // the upgrader has written the error response
	}
	defer done()
	sess.Touch()

	owner := rand.Text()          // this connection, as the owner of the comms it opens (never sent)
	out := make(chan any, 64)     // frames for the writer besides events
	resume := make(chan int64, 1) // resubscribe requests for the writer
	execs := make(chan wsExecute, wsPendingExecutes)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		defer r.conns.Recover(&err)
		in := newIntrospector(gctx, sess, out, r.conns.Recover)
		defer in.close()
		defer close(execs)
		return r.read(gctx, conn, sess, lim, wsInputs{out: out, resume: resume, execs: execs, introspect: in})
	})
	g.Go(func() (err error) {
		defer r.conns.Recover(&err)
		return submit(gctx, sess, execs, out)
	})
	g.Go(func() (err error) {
		defer r.conns.Recover(&err)
		defer conn.Close() // unblocks the reader
		return r.write(gctx, conn, sess, owner, since, out, resume)
	})
	_ = g.Wait()
	dropCommSends(out)
	sess.Contexts().CloseComms(owner) // nobody else may use them
	return nil
}

// dropCommSends lets go of the comm frames left in out when the
// connection ended (their large-frame budget with them). Only once out's
// senders and receiver have ended.
func dropCommSends(out chan any) {
	for {
		select {
		case v := <-out:
			if c, ok := v.(commSend); ok {
				c.release()
			}
		default:
			return
		}
	}
}

// wsInputs are where the reader hands a connection's frames.
type wsInputs struct {
	out        chan<- any       // rejections, for the writer
	resume     chan int64       // resubscribe requests, for the writer
	execs      chan<- wsExecute // executes, for the submitter
	introspect *introspector
	// keep takes over the large-frame budget of the frame being handled
	// (wsconn.Reader.Keep), for a comm frame handed to the writer.
	keep func() (release func())
}

// submit owns the hand-off of a connection's executes to the session, in
// order: while the session's queue is full it waits (and, once execs is
// full, the reader stops reading the socket). It ends when the reader
// closes execs or the connection ends.
func submit(ctx context.Context, sess *sessions.Session, execs <-chan wsExecute, out chan<- any) error {
	for x := range execs {
		target, err := sess.Contexts().Resolve(ctx, x.context, x.language)
		if err == nil {
			_, err = target.SubmitWait(ctx, x.req)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			send(ctx, out, rejection(x.req.ID, err))
		}
	}
	return nil
}

// read owns the connection's reading side. It reads at most
// wsconn.FrameRate frames a second; past that it waits before reading on,
// so a fast client is slowed by TCP backpressure, never dropped.
// Its frames are read within lim; only comm frames may be large.
func (r *sessionSocket) read(ctx context.Context, conn *websocket.Conn, sess *sessions.Session, lim wsconn.Limits, in wsInputs) error {
	defer send(ctx, in.out, nil) // tells the writer the client is gone
	frames := r.conns.NewReader(conn, lim)
	defer frames.Close()
	in.keep = frames.Keep
	for {
		_, data, err := frames.Next(ctx)
		if err != nil {
			return err
		}
		var f api.AnyClientFrame
		if err := json.Unmarshal(data, &f); err != nil {
			send(ctx, in.out, *badFrame("", "bad_frame", "frame is not a JSON object: "+err.Error()))
			continue
		}
		if frames.Large() && f.Type != api.FrameComm {
			send(ctx, in.out, *badFrame(f.ID, "frame_too_large", fmt.Sprintf("only comm frames may exceed %d bytes", lim.Frame)))
			continue
		}
		if rej := handleFrame(ctx, sess, f, in); rej != nil {
			send(ctx, in.out, *rej)
		}
	}
}

func handleFrame(ctx context.Context, sess *sessions.Session, f api.AnyClientFrame, in wsInputs) *api.RejectedFrame {
	reject := func(err error) *api.RejectedFrame {
		r := rejection(f.ID, err)
		return &r
	}
	switch f.Type {
	case api.FrameExecute:
		if f.Code == nil {
			return badFrame(f.ID, "bad_frame", "execute needs code")
		}
		if f.ID == "" {
			return badFrame("", "bad_frame", "execute needs an id")
		}
		timeout, err := seconds("timeout_s", f.TimeoutS)
		if err != nil {
			return reject(err)
		}
		select {
		case in.execs <- wsExecute{req: sessions.ExecRequest{ID: f.ID, Code: *f.Code, Timeout: timeout, AllowStdin: true,
			Envs: f.Envs, Cwd: f.Cwd, UserExpressions: f.UserExpressions},
			context: f.Context, language: f.Language}:
		case <-ctx.Done():
		}
	case api.FrameInterrupt:
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		if f.Context != "" {
			var target *sessions.Kernel
			if target, err = sess.Contexts().Get(f.Context); err == nil {
				err = target.Interrupt(ictx)
			}
		} else {
			err = sess.Contexts().Interrupt(ictx)
		}
		if err != nil {
			return reject(err)
		}
	case api.FrameInputReply:
		if f.Value == nil {
			return badFrame(f.ID, "bad_frame", "input_reply needs value")
		}
		if err := sess.Contexts().Input("", f.ID, *f.Value); err != nil {
			return reject(err)
		}
	case api.FrameResume:
		if f.Since == nil || *f.Since < 0 {
			return badFrame(f.ID, "bad_frame", "resume needs since >= 0")
		}
		select {
		case <-in.resume:
		default:
		}
		in.resume <- *f.Since
	case api.FrameComplete, api.FrameInspect:
		if f.Code == nil || f.CursorPos == nil || f.ID == "" {
			return badFrame(f.ID, "bad_frame", f.Type+" needs id, code and cursor_pos")
		}
		in.introspect.start(f)
	case api.FrameComm:
		buffers := make([][]byte, 0, len(f.Buffers))
		for _, b := range f.Buffers {
			if len(buffers) > sessions.MaxCommBuffers {
				break // the session refuses the message with its reason
			}
			data, err := base64.StdEncoding.DecodeString(b)
			if err != nil {
				return badFrame(f.ID, "bad_comm", "comm buffers must be base64 strings")
			}
			buffers = append(buffers, data)
		}
		c := commSend{id: f.ID, context: f.Context, msgType: f.MsgType, content: f.Content, metadata: f.Metadata, buffers: buffers, release: in.keep()}
		if !send(ctx, in.out, c) {
			c.release()
		}
	case api.FrameCommInfo:
		in.introspect.start(f)
	default:
		return badFrame(f.ID, "unknown_type",
			"unknown frame type "+strconv.Quote(f.Type)+"; expected execute, interrupt, input_reply, resume, complete, inspect, comm or comm_info")
	}
	return nil
}

// goingAway tells the client the connection ends because the gateway
// does (1001); nothing when the connection is already closing.
func goingAway(conn *websocket.Conn) {
	_ = conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseGoingAway, "gateway shutting down"), time.Now().Add(time.Second))
}

// send hands v to the writer; false when the connection ended first.
func send(ctx context.Context, out chan<- any, v any) bool {
	select {
	case out <- v:
		return true
	case <-ctx.Done():
		return false
	}
}

// write owns the connection's writing side: events, side messages,
// rejections and pings; and the sending of the client's comm frames
// (commSend), for their answers' order.
func (r *sessionSocket) write(ctx context.Context, conn *websocket.Conn, sess *sessions.Session, owner string, since int64, out <-chan any, resume <-chan int64) error {
	stream := sess.Stream(ctx, since)
	defer stream.Close()
	ping := time.NewTicker(r.ping)
	defer ping.Stop()
	write := func(v any) error {
		_ = conn.SetWriteDeadline(time.Now().Add(wsconn.WriteTimeout))
		return conn.WriteJSON(v)
	}
	// A snapshot of the kernel state; its seq is where this stream resumes
	// from (every later event has a larger one).
	info := sess.Info()
	if err := write(api.KernelEvent{Envelope: api.Envelope{Seq: since, Type: api.EventKernel}, State: string(info.State)}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			goingAway(conn)
			return ctx.Err()
		case v := <-out:
			if v == nil {
				// The reader ended. At a shutdown its end may come before
				// ctx's (both are ready: a connection that entered as the
				// gateway began to shut down): the client is still told.
				if r.conns.ShuttingDown() {
					goingAway(conn)
					return ctx.Err()
				}
				return wsconn.ErrClientGone
			}
			if c, ok := v.(commSend); ok {
				v = c.send(sess, owner)
			}
			if err := write(v); err != nil {
				return err
			}
		case n := <-resume:
			stream.Resume(n)
		case it, ok := <-stream.C:
			if !ok {
				if ctx.Err() != nil || r.conns.ShuttingDown() { // the gateway ends its sessions as it goes
					goingAway(conn)
					return ctx.Err()
				}
				_ = conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, "session ended"), time.Now().Add(time.Second))
				return wsconn.ErrSessionEnded
			}
			var v any
			if it.Side != nil {
				v = it.Side.WireComm()
			} else {
				frame, err := it.Event.Frame()
				if err != nil {
					return err
				}
				v = frame
			}
			if err := write(v); err != nil {
				return err
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsconn.WriteTimeout)); err != nil {
				return err
			}
		}
	}
}
