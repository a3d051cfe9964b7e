package jupyter

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/tenant"
	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"
)

// The channels WebSocket: GET /api/kernels/{id}/channels. This file has
// the connection and its handler; dispatch.go reads and acts on the
// client's messages, render.go writes the session's events as Jupyter
// messages, resume.go keeps where clients left off.
//
// How it relates to the session:
//   - An execute_request becomes a sessions.ExecRequest in the session's
//     queue, with the client's header as its parent: it is queued, timed
//     out, capped and logged in the event log like a /v1 execution (its
//     execution id is the request's msg_id when that is a usable id).
//     stop_on_error aborts the client's own executions queued behind a
//     failed one (status "aborted").
//   - iopub is rendered from the session's events, on every connection
//     alike (each subscribes to the session's event hub as a /v1 WebSocket
//     does): started → status busy + execute_input; stream, display_data,
//     update_display_data, execute_result, error, clear_output; done →
//     status idle. Executions from /v1 are rendered too, with a parent
//     header glassroom makes (msg_id = the execution id).
//   - execute_reply (shell) goes to the connections of the client that
//     sent the request (its Jupyter session), so a client that reconnects
//     gets it.
//   - input_request (stdin) goes only to the connection that sent the
//     execute_request, and only that connection's input_reply reaches the
//     kernel (Session.InputAs with the connection's owner identity, which
//     the session records with the execution and no client ever sees):
//     header.session, which any connection can copy from an iopub parent,
//     does not count. A client that reconnects while input() waits cannot
//     answer it; interrupting the cell ends the wait.
//   - kernel_info (cached per kernel incarnation, "debugger" as the kernel
//     says it), complete, inspect, is_complete and history requests go to
//     the kernel (Session.KernelRequest), answered with status busy/idle
//     around the reply as a kernel does; interrupt_request →
//     Session.Interrupt; shutdown_request → Session.Restart, or the
//     session's deletion.
//   - debug_request (control) goes to the kernel's control channel
//     (Session.KernelRequest, bounded like the others), beside the
//     execution queue, so the debugger is answered while a cell runs or is
//     stopped at a breakpoint; debug_reply goes back to the connection
//     that asked. A request glassroom refuses (malformed, or the
//     debugger's initialize while a cell runs) is answered with a DAP
//     response with success false. debug_event reaches the client with
//     the kernel's other messages of no request. The debugger (debugpy)
//     runs inside the kernel's sandbox, on its own loopback.
//   - execute_request's user_expressions reach the kernel, and the
//     execute_reply carries the kernel's user_expressions and payload
//     (pager, set_next_input, ask_exit) unchanged (bounded by the kernel
//     client).
//   - Comms (widgets, tqdm.notebook, ipympl) go both ways beside the
//     queue, while the kernel is idle and while a cell runs: a client's
//     comm_open, comm_msg and comm_close (their buffers too) go to the
//     kernel through Session.SendCommParent, as this connection's owner
//     identity: a comm a connection opened is its own (and closed
//     when the connection ends: Session.CloseComms), another
//     connection's messages to it are refused, the kernel's comms are
//     everyone's (sessions/comms.go has the rules and limits). A refused
//     message is answered busy then idle (a refused comm_open with its
//     comm_close). comm_info_request → Session.CommInfo. What the kernel
//     sends that belongs to no request of the queue (comm_open, comm_msg,
//     comm_close, debug_event, the output and status of a comm's handler,
//     of a thread a cell left running: Session.SubscribeKernel) goes to
//     every connection as the iopub message it is, buffers kept, the
//     client's comm message as the parent of its handler's output; the
//     writer merges them with the events by their After, so they keep the
//     kernel's order (a widget's comm_open before its display, an Output
//     widget's msg_id set before the output it captures, reset after). A
//     connection that falls behind loses side messages (nothing of them
//     is replayed on reconnect; a widget manager asks comm_info and the
//     widgets' state again).
//   - Headers of messages to the client are glassroom's (session = the
//     kernel incarnation's id); nothing is signed on the WebSocket.

const (
	// maxPendingExecutes is how many execute_requests a connection may
	// have waiting for room in the session's queue before its socket stops
	// being read.
	maxPendingExecutes = 8
	// maxKernelRequests bounds a connection's requests waiting for the
	// kernel (complete, inspect, kernel_info, ...); past it the socket
	// stops being read.
	maxKernelRequests = 8
	// maxClientSessions bounds the Jupyter sessions a connection is
	// known to speak for.
	maxClientSessions = 16
	// maxTracked bounds the executions a connection keeps state for.
	maxTracked = 256
)

// channels serves a kernel's channels over one WebSocket.
func (a *API) channels(c echo.Context) error {
	sess, err := a.session(c)
	if err != nil {
		return err
	}
	clientSession := c.QueryParam("session_id")
	if len(clientSession) > 256 || !printable(clientSession) {
		return httperr.New(http.StatusBadRequest, "bad_request", "session_id must be at most 256 printable characters")
	}
	release, err := sess.Attach()
	if err != nil {
		return err
	}
	defer release()
	// A frame may be up to the code limit plus 256 KiB; a comm_open or
	// comm_msg (an ipywidgets FileUpload's), up to what its MaxCommBytes
	// need, when the gateway's budget for large frames allows (the tenant
	// holds at most its part of it).
	cfg := a.mgr.Config()
	lim := wsconn.Limits{Frame: int64(cfg.MaxCodeBytes) + 256<<10, Large: wsconn.LargeFrameSize(cfg.MaxCommBytes), Owner: tenant.Of(c)}
	ws, ctx, done, ok := a.conns.Accept(&a.upgrader, c.Response(), c.Request(), lim.Frame)
	if !ok {
		return nil // the upgrader has written the error response
	}
	defer done()
	sess.Touch()

	jc := &conn{
		api: a, sess: sess, ws: ws, v1: ws.Subprotocol() == subprotocolV1, tenant: lim.Owner, limits: lim, client: clientSession, owner: rand.Text(),
		ids: newMsgIDs(), out: make(chan jbatch, 64), execs: make(chan sessions.ExecRequest, maxPendingExecutes),
		sem: make(chan struct{}, maxKernelRequests), sessions: map[string]bool{}, own: map[string]*jparent{}, inputs: map[string]string{},
	}
	if clientSession != "" {
		jc.sessions[clientSession] = true
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		defer a.conns.Recover(&err)
		defer close(jc.execs)
		return jc.read(gctx)
	})
	g.Go(func() (err error) {
		defer a.conns.Recover(&err)
		return jc.submit(gctx)
	})
	g.Go(func() (err error) {
		defer a.conns.Recover(&err)
		defer ws.Close() // unblocks the reader
		return jc.write(gctx)
	})
	_ = g.Wait()
	jc.wg.Wait() // the kernel requests the reader started end with gctx
	// The comms this connection opened: nobody else may use them.
	sess.First().Comms().CloseComms(jc.owner)
	return nil
}

// jbatch is a group of messages for the writer, written in order.
type jbatch struct {
	msgs []*outMsg
	// reassert: after the batch, say again that the kernel is busy with
	// the running execution (a request answered while a cell runs ends
	// with its own idle status, as a kernel's does after the cell).
	reassert bool
	written  chan struct{} // closed once written, if set
}

// jparent is a request header and what glassroom reads of it.
type jparent struct {
	raw     json.RawMessage
	msgID   string
	session string
	started time.Time
	// exec: the parent came from the session's record of the execution
	// (ExecInfo), and owner is the ExecRequest.Owner recorded there.
	exec  bool
	owner string
}

func parseParent(raw json.RawMessage) *jparent {
	p := &jparent{raw: raw}
	var h jheader
	if json.Unmarshal(raw, &h) == nil {
		p.msgID, p.session = h.MsgID, h.Session
	}
	return p
}

// v1Parent is the parent header glassroom makes for an execution that came
// from /v1 (or whose request header is unknown): its msg_id is the
// execution id.
func v1Parent(id string, started time.Time) *jparent {
	raw, _ := json.Marshal(jheader{MsgID: id, MsgType: "execute_request", Session: "glassroom", Username: "glassroom",
		Date: formatDate(started), Version: "5.3"})
	return &jparent{raw: raw, msgID: id, session: "glassroom", started: started}
}

// conn is one channels WebSocket. It owns three goroutines (reader,
// submitter, writer) and the kernel requests the reader starts.
type conn struct {
	api    *API
	sess   *sessions.Session
	ws     *websocket.Conn
	v1     bool
	tenant string
	limits wsconn.Limits // of the frames read
	client string        // the session_id query parameter
	ids    *msgIDs
	out    chan jbatch               // for the writer
	execs  chan sessions.ExecRequest // for the submitter
	sem    chan struct{}             // kernel requests in flight
	wg     sync.WaitGroup            // kernel request goroutines

	// owner identifies this connection to the session as the submitter of
	// its executions (ExecRequest.Owner): random, never sent to a client.
	owner string

	mu       sync.Mutex
	sessions map[string]bool     // Jupyter sessions (header.session) of this client
	own      map[string]*jparent // executions this connection submitted, until done
	inputs   map[string]string   // input_request msg_id → execution id
}

// mine reports whether replies to a request with header p belong to this
// connection: the request came from the client's Jupyter session (so a
// client that reconnected gets them), or through this connection.
func (jc *conn) mine(id string, p *jparent) bool {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	if p.session != "" && jc.sessions[p.session] {
		return true
	}
	o := jc.own[id]
	return o != nil && o.msgID == p.msgID
}

// ownsInput reports whether execution id, described by p, was submitted
// through this connection, by what the session recorded of it
// (ExecInfo.Owner), never by anything a client wrote.
func (jc *conn) ownsInput(id string, p *jparent) bool {
	if p.exec {
		return p.owner == jc.owner
	}
	rid, x, ok := jc.sess.First().Running()
	return ok && rid == id && x != nil && x.Owner == jc.owner
}

func (jc *conn) noteSession(session string) {
	if session == "" {
		return
	}
	jc.mu.Lock()
	defer jc.mu.Unlock()
	if !jc.sessions[session] && len(jc.sessions) < maxClientSessions {
		jc.sessions[session] = true
	}
}

func (jc *conn) send(ctx context.Context, b jbatch) {
	select {
	case jc.out <- b:
	case <-ctx.Done():
	}
}

// status is an iopub status message.
func status(state string, parent json.RawMessage) *outMsg {
	return &outMsg{channel: "iopub", msgType: "status", parent: parent, content: map[string]string{"execution_state": state}}
}

// answer is the batch a kernel sends for a request it handles: busy, the
// replies, idle, all with the request as parent.
func answer(parent json.RawMessage, msgs ...*outMsg) jbatch {
	all := append([]*outMsg{status("busy", parent)}, msgs...)
	return jbatch{msgs: append(all, status("idle", parent)), reassert: true}
}

func reply(channel, msgType string, parent json.RawMessage, content any) *outMsg {
	return &outMsg{channel: channel, msgType: msgType, parent: parent, content: content}
}

// errorReply is the content of a failed request's reply.
func errorReply(ename, evalue string) map[string]any {
	return map[string]any{"status": "error", "ename": ename, "evalue": evalue, "traceback": []string{}}
}
