package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"
)

// The channels WebSocket of the Jupyter face: GET /api/kernels/{id}/channels.
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
//   - kernel_info (cached per kernel incarnation; the debugger is reported
//     off), complete, inspect, is_complete and history requests go to the
//     kernel (Session.KernelRequest), answered with status busy/idle around
//     the reply as a kernel does; interrupt_request → Session.Interrupt;
//     shutdown_request → Session.Restart, or the session's deletion.
//   - Comms (widgets) are not relayed: comm_info answers no comms, a
//     client's comm_open is closed at once (comm_close, as a kernel does
//     for an unknown target), comm_msg and comm_close are ignored.
//   - Headers of messages to the client are glassroom's (session = the
//     kernel incarnation's id); nothing is signed on the WebSocket.

const (
	// jupyterPendingExecutes is how many execute_requests a connection may
	// have waiting for room in the session's queue before its socket stops
	// being read.
	jupyterPendingExecutes = 8
	// jupyterKernelRequests bounds a connection's requests waiting for the
	// kernel (complete, inspect, kernel_info, ...); past it the socket
	// stops being read.
	jupyterKernelRequests = 8
	// jupyterClientSessions bounds the Jupyter sessions a connection is
	// known to speak for.
	jupyterClientSessions = 16
	// jupyterTracked bounds the executions a connection keeps state for.
	jupyterTracked = 256
)

// jupyterChannels serves a kernel's channels over one WebSocket.
func (s *Server) jupyterChannels(c echo.Context) error {
	sess, err := s.jupyterSession(c)
	if err != nil {
		return err
	}
	clientSession := c.QueryParam("session_id")
	if len(clientSession) > 256 || !printable(clientSession) {
		return newError(http.StatusBadRequest, "bad_request", "session_id must be at most 256 printable characters")
	}
	release, err := sess.Attach()
	if err != nil {
		return err
	}
	defer release()
	up := s.upgrader
	up.Subprotocols = []string{jupyterV1}
	ws, err := up.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has written the error response
	}
	s.wsConns.Add(1)
	defer s.wsConns.Done()
	defer ws.Close()
	ws.SetReadLimit(int64(s.mgr.Config().MaxCodeBytes) + 256<<10)
	sess.Touch()

	jc := &jupyterConn{
		srv: s, sess: sess, ws: ws, v1: ws.Subprotocol() == jupyterV1, tenant: tenant(c), client: clientSession, owner: rand.Text(),
		ids: newMsgIDs(), out: make(chan jbatch, 64), execs: make(chan sessions.ExecRequest, jupyterPendingExecutes),
		sem: make(chan struct{}, jupyterKernelRequests), sessions: map[string]bool{}, own: map[string]*jparent{}, inputs: map[string]string{},
	}
	if clientSession != "" {
		jc.sessions[clientSession] = true
	}
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		defer s.recoverWS(&err)
		defer close(jc.execs)
		return jc.read(gctx)
	})
	g.Go(func() (err error) {
		defer s.recoverWS(&err)
		return jc.submit(gctx)
	})
	g.Go(func() (err error) {
		defer s.recoverWS(&err)
		defer ws.Close() // unblocks the reader
		return jc.write(gctx)
	})
	_ = g.Wait()
	jc.wg.Wait() // the kernel requests the reader started end with gctx
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
		Date: jupyterDate(started), Version: "5.3"})
	return &jparent{raw: raw, msgID: id, session: "glassroom", started: started}
}

// jupyterConn is one channels WebSocket. It owns three goroutines (reader,
// submitter, writer) and the kernel requests the reader starts.
type jupyterConn struct {
	srv    *Server
	sess   *sessions.Session
	ws     *websocket.Conn
	v1     bool
	tenant string
	client string // the session_id query parameter
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
func (jc *jupyterConn) mine(id string, p *jparent) bool {
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
func (jc *jupyterConn) ownsInput(id string, p *jparent) bool {
	if p.exec {
		return p.owner == jc.owner
	}
	rid, x, ok := jc.sess.Running()
	return ok && rid == id && x != nil && x.Owner == jc.owner
}

func (jc *jupyterConn) noteSession(session string) {
	if session == "" {
		return
	}
	jc.mu.Lock()
	defer jc.mu.Unlock()
	if !jc.sessions[session] && len(jc.sessions) < jupyterClientSessions {
		jc.sessions[session] = true
	}
}

func (jc *jupyterConn) send(ctx context.Context, b jbatch) {
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

// read owns the socket's reading side, at most wsFrameRate frames a second
// (a faster client waits, slowed by TCP). A frame glassroom cannot act on
// is dropped, as a kernel drops a malformed message.
func (jc *jupyterConn) read(ctx context.Context) error {
	limit := rate.NewLimiter(wsFrameRate, wsFrameRate)
	for {
		if err := limit.Wait(ctx); err != nil {
			return err
		}
		typ, data, err := jc.ws.ReadMessage()
		if err != nil {
			return err
		}
		m, err := decodeFrame(data, typ == websocket.BinaryMessage, jc.v1)
		if err != nil {
			jc.srv.log.Debug().Err(err).Msg("jupyter: dropped a client frame")
			continue
		}
		h, err := readHeader(m.Header)
		if err != nil {
			jc.srv.log.Debug().Err(err).Msg("jupyter: dropped a client message")
			continue
		}
		jc.noteSession(h.Session)
		if err := jc.handle(ctx, m, h); err != nil {
			return err
		}
	}
}

// handle acts on one client message.
func (jc *jupyterConn) handle(ctx context.Context, m *jmsg, h jheader) error {
	switch m.Channel {
	case "shell":
		switch h.MsgType {
		case "execute_request":
			return jc.execute(ctx, m, h)
		case "kernel_info_request":
			jc.kernelInfo(ctx, "shell", m)
		case "complete_request", "inspect_request", "is_complete_request", "history_request":
			jc.relay(ctx, m, h)
		case "comm_info_request":
			jc.send(ctx, answer(m.Header, reply("shell", "comm_info_reply", m.Header, map[string]any{"status": "ok", "comms": map[string]any{}})))
		case "comm_open":
			var open struct {
				CommID string `json:"comm_id"`
			}
			_ = json.Unmarshal(m.Content, &open)
			jc.send(ctx, answer(m.Header, reply("iopub", "comm_close", m.Header, map[string]any{"comm_id": open.CommID, "data": map[string]any{}})))
		case "shutdown_request", "interrupt_request": // older clients send them on shell
			return jc.control(ctx, "shell", m, h)
		default: // comm_msg, comm_close and unknown types: a kernel ignores them, busy then idle
			jc.send(ctx, answer(m.Header))
		}
	case "control":
		return jc.control(ctx, "control", m, h)
	case "stdin":
		if h.MsgType == "input_reply" {
			jc.inputReply(m)
		}
	default: // iopub and hb carry nothing from a client
	}
	return nil
}

func (jc *jupyterConn) control(ctx context.Context, channel string, m *jmsg, h jheader) error {
	switch h.MsgType {
	case "interrupt_request":
		jc.spawn(ctx, func(ctx context.Context) jbatch {
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			content := map[string]any{"status": "ok"}
			if err := jc.sess.Interrupt(ictx); err != nil {
				content = errorReply("InterruptError", toAPIError(err).Message)
			}
			return answer(m.Header, reply(channel, "interrupt_reply", m.Header, content))
		})
	case "shutdown_request":
		return jc.shutdown(ctx, channel, m)
	case "kernel_info_request":
		jc.kernelInfo(ctx, channel, m)
	default: // debug_request (the debugger is reported off), usage_request, unknown
		jc.send(ctx, answer(m.Header))
	}
	return nil
}

// spawn runs f, a request waiting on the kernel, beside the reader (at most
// jupyterKernelRequests at once) and hands its batch to the writer.
func (jc *jupyterConn) spawn(ctx context.Context, f func(context.Context) jbatch) {
	select {
	case jc.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	jc.wg.Add(1)
	go func() {
		defer jc.wg.Done()
		defer func() { <-jc.sem }()
		var err error
		defer jc.srv.recoverWS(&err)
		b := f(ctx)
		jc.send(ctx, b)
	}()
}

// kernelInfo answers kernel_info_request with the kernel's reply, cached
// per kernel incarnation. glassroom does not relay debug requests, so the
// debugger is reported off.
func (jc *jupyterConn) kernelInfo(ctx context.Context, channel string, m *jmsg) {
	jc.spawn(ctx, func(ctx context.Context) jbatch {
		raw, err := jc.sess.KernelInfo(ctx)
		var content any
		if err != nil {
			content = errorReply("KernelInfoError", toAPIError(err).Message)
		} else {
			var fields map[string]json.RawMessage
			if json.Unmarshal(raw, &fields) != nil || fields == nil {
				fields = map[string]json.RawMessage{}
			}
			fields["debugger"] = json.RawMessage("false")
			if _, ok := fields["status"]; !ok {
				fields["status"] = json.RawMessage(`"ok"`)
			}
			content = fields
		}
		return answer(m.Header, reply(channel, "kernel_info_reply", m.Header, content))
	})
}

// relay passes a request that reads the kernel's state to the kernel.
func (jc *jupyterConn) relay(ctx context.Context, m *jmsg, h jheader) {
	jc.spawn(ctx, func(ctx context.Context) jbatch {
		replyType := strings.TrimSuffix(h.MsgType, "request") + "reply"
		if why := checkRelayed(h.MsgType, m.Content); why != "" {
			return answer(m.Header, reply("shell", replyType, m.Header, errorReply("BadRequest", why)))
		}
		r, err := jc.sess.KernelRequest(ctx, sessions.ShellChannel, h.MsgType, m.Content)
		if err != nil {
			return answer(m.Header, reply("shell", replyType, m.Header, errorReply("KernelRequestError", toAPIError(err).Message)))
		}
		msg := reply("shell", r.MsgType, m.Header, r.Content)
		msg.metadata, msg.buffers = r.Metadata, r.Buffers
		return answer(m.Header, msg)
	})
}

// relayedFields are the members a relayed request must have, by JSON kind:
// ipykernel drops a request that lacks one without a reply, which would
// hold the client (and a slot of this connection) until the wait ends.
var relayedFields = map[string]map[string]byte{
	"complete_request":    {"code": '"', "cursor_pos": '0'},
	"inspect_request":     {"code": '"', "cursor_pos": '0'},
	"is_complete_request": {"code": '"'},
	"history_request":     {"hist_access_type": '"', "raw": 'b', "output": 'b'},
}

// historyFields are what each kind of history_request needs besides.
var historyFields = map[string]map[string]byte{
	"tail": {"n": '0'}, "range": {"session": '0', "start": '0', "stop": '0'}, "search": {"pattern": '"'},
}

// checkRelayed says what is wrong with a relayed request's content, or "".
func checkRelayed(msgType string, content json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(content, &fields) != nil {
		return msgType + " content is not a JSON object"
	}
	kind := func(raw json.RawMessage) byte {
		switch {
		case len(raw) == 0:
			return 0
		case raw[0] == '"':
			return '"'
		case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
			return '0'
		case string(raw) == "true" || string(raw) == "false":
			return 'b'
		}
		return raw[0]
	}
	want := map[string]byte{}
	for k, v := range relayedFields[msgType] {
		want[k] = v
	}
	if msgType == "history_request" {
		var access string
		_ = json.Unmarshal(fields["hist_access_type"], &access)
		for k, v := range historyFields[access] {
			want[k] = v
		}
	}
	names := map[byte]string{'"': "a string", '0': "a number", 'b': "a boolean"}
	for k, v := range want {
		if kind(fields[k]) != v {
			return msgType + " needs " + k + " (" + names[v] + ")"
		}
	}
	return ""
}

// shutdown answers shutdown_request, then restarts the kernel or deletes
// the session (which ends this connection).
func (jc *jupyterConn) shutdown(ctx context.Context, channel string, m *jmsg) error {
	var req struct {
		Restart bool `json:"restart"`
	}
	_ = json.Unmarshal(m.Content, &req)
	content := map[string]any{"status": "ok", "restart": req.Restart}
	b := answer(m.Header, reply(channel, "shutdown_reply", m.Header, content), reply("iopub", "shutdown_reply", m.Header, content))
	b.written = make(chan struct{})
	jc.send(ctx, b)
	select {
	case <-b.written:
	case <-ctx.Done():
		return ctx.Err()
	}
	if req.Restart {
		if err := jc.sess.Restart(ctx); err != nil {
			jc.srv.log.Debug().Err(err).Msg("jupyter: restart for shutdown_request failed")
		}
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := jc.srv.mgr.Delete(dctx, jc.tenant, jc.sess.ID()); err != nil {
		jc.srv.log.Debug().Err(err).Msg("jupyter: delete for shutdown_request failed")
	}
	return nil
}

// executeContent is what glassroom reads of an execute_request.
type executeContent struct {
	Code         *string `json:"code"`
	Silent       bool    `json:"silent"`
	StoreHistory *bool   `json:"store_history"`
	AllowStdin   *bool   `json:"allow_stdin"`
	StopOnError  *bool   `json:"stop_on_error"`
}

// execute queues an execute_request in the session, through the
// submitter (which waits for room in the queue, in order).
func (jc *jupyterConn) execute(ctx context.Context, m *jmsg, h jheader) error {
	var c executeContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Code == nil {
		jc.send(ctx, jc.rejection(m.Header, "execute_request needs content.code"))
		return nil
	}
	id := h.MsgID
	if id == "" || len(id) > 128 || !printable(id) {
		id = jc.ids.next() // the parent header still names the client's msg_id
	}
	group := h.Session
	if group == "" {
		group = jc.ids.prefix
	}
	req := sessions.ExecRequest{
		ID: id, Code: *c.Code, AllowStdin: c.AllowStdin == nil || *c.AllowStdin,
		Silent: c.Silent, NoHistory: c.Silent || (c.StoreHistory != nil && !*c.StoreHistory),
		StopOnError: !c.Silent && (c.StopOnError == nil || *c.StopOnError), Group: group, Parent: m.Header,
		Owner: jc.owner,
	}
	jc.mu.Lock()
	if len(jc.own) < jupyterTracked {
		jc.own[id] = parseParent(m.Header)
	}
	jc.mu.Unlock()
	select {
	case jc.execs <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// submit owns the hand-off of the connection's executions to the session,
// in order; a refused one is answered with an error reply.
func (jc *jupyterConn) submit(ctx context.Context) error {
	for req := range jc.execs {
		if _, err := jc.sess.SubmitWait(ctx, req); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			jc.mu.Lock()
			delete(jc.own, req.ID)
			jc.mu.Unlock()
			jc.send(ctx, jc.rejection(req.Parent, toAPIError(err).Message))
		}
	}
	return nil
}

// rejection answers an execute_request glassroom refused: the error shows
// in the cell (iopub), and the reply says so.
func (jc *jupyterConn) rejection(parent json.RawMessage, why string) jbatch {
	content := errorReply("ExecutionRefused", why)
	content["traceback"] = []string{"glassroom refused the execution: " + why}
	return answer(parent, reply("iopub", "error", parent, content), reply("shell", "execute_reply", parent, content))
}

// inputReply answers the kernel's input_request, if it was this
// connection's: the session refuses the answer of any other (InputAs).
func (jc *jupyterConn) inputReply(m *jmsg) {
	var c struct {
		Value string `json:"value"`
	}
	_ = json.Unmarshal(m.Content, &c)
	var parent jheader
	_ = json.Unmarshal(m.Parent, &parent)
	jc.mu.Lock()
	id := jc.inputs[parent.MsgID]
	delete(jc.inputs, parent.MsgID)
	jc.mu.Unlock()
	if id == "" { // a reply that does not name our input_request: the running execution's, if it is this connection's
		rid, _, ok := jc.sess.Running()
		if !ok {
			jc.srv.log.Debug().Msg("jupyter: input_reply while nothing runs")
			return
		}
		id = rid
	}
	if err := jc.sess.InputAs(jc.owner, id, c.Value); err != nil {
		jc.srv.log.Debug().Err(err).Msg("jupyter: input_reply refused (no input() of this connection pending)")
	}
}

// jwriter is the writer's state: what it has told the client.
type jwriter struct {
	running    string              // the execution the client was told is running
	parents    map[string]*jparent // parents of started executions
	errs       map[string]map[string]any
	lastKernel string
	lastSent   int64
}

// write owns the socket's writing side: the session's events rendered as
// Jupyter messages, the replies the reader's requests produce, and pings.
func (jc *jupyterConn) write(ctx context.Context) error {
	since := jc.sess.LastSeq()
	if jc.client != "" {
		if seq, ok := jc.srv.resume.take(jc.tenant, jc.sess.ID(), jc.client); ok {
			since = seq // a client that reconnects gets what it missed
		}
	}
	sub := jc.sess.Subscribe(since)
	defer func() { sub.Close() }()
	w := &jwriter{parents: map[string]*jparent{}, errs: map[string]map[string]any{}, lastSent: since}
	defer func() {
		if jc.client != "" {
			jc.srv.resume.put(jc.tenant, jc.sess.ID(), jc.client, w.lastSent)
		}
	}()
	if err := jc.writeMsgs(jc.initialStatus(w)); err != nil {
		return err
	}
	ping := time.NewTicker(jc.srv.cfg.WSPingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			if jc.srv.base.Err() != nil {
				_ = jc.ws.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseGoingAway, "gateway shutting down"), time.Now().Add(time.Second))
			}
			return ctx.Err()
		case b := <-jc.out:
			msgs := b.msgs
			if p := w.parents[w.running]; b.reassert && p != nil {
				msgs = append(msgs, status("busy", p.raw))
			}
			if err := jc.writeMsgs(msgs); err != nil {
				return err
			}
			if b.written != nil {
				close(b.written)
			}
		case ev, ok := <-sub.C:
			if !ok {
				if sub.Lagged() { // fell behind: replay from the backlog
					sub = jc.sess.Subscribe(w.lastSent)
					continue
				}
				_ = jc.writeMsgs([]*outMsg{status("dead", nil)})
				_ = jc.ws.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, "kernel shut down"), time.Now().Add(time.Second))
				return errSessionEnded
			}
			if ev.Seq <= w.lastSent {
				continue
			}
			if err := jc.writeMsgs(jc.render(w, ev)); err != nil {
				return err
			}
			w.lastSent = ev.Seq
		case <-ping.C:
			if err := jc.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteTimeout)); err != nil {
				return err
			}
		}
	}
}

func (jc *jupyterConn) writeMsgs(msgs []*outMsg) error {
	session := jc.sess.KernelSession()
	now := time.Now()
	for _, m := range msgs {
		id := m.msgID
		if id == "" {
			id = jc.ids.next()
		}
		data, binaryFrame, err := encode(m, id, session, now, jc.v1)
		if err != nil {
			jc.srv.log.Warn().Err(err).Str("msg_type", m.msgType).Msg("jupyter: could not encode a message")
			continue
		}
		typ := websocket.TextMessage
		if binaryFrame {
			typ = websocket.BinaryMessage
		}
		_ = jc.ws.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
		if err := jc.ws.WriteMessage(typ, data); err != nil {
			return err
		}
	}
	return nil
}

// initialStatus tells a new connection the kernel's state, as a kernel's
// status messages would have.
func (jc *jupyterConn) initialStatus(w *jwriter) []*outMsg {
	switch jc.sess.Info().State {
	case sessions.StateBusy:
		if id, x, ok := jc.sess.Running(); ok {
			p := jc.parentOf(id, x)
			w.parents[id], w.running = p, id
			return []*outMsg{status("busy", p.raw)}
		}
		return []*outMsg{status("busy", nil)}
	case sessions.StateRestarting:
		w.lastKernel = string(sessions.StateRestarting)
		return []*outMsg{status("starting", nil)}
	case sessions.StateDead:
		w.lastKernel = string(sessions.StateDead)
		return []*outMsg{status("dead", nil)}
	}
	return []*outMsg{status("idle", nil)}
}

// parentOf is the parent header of execution id described by x (nil when
// unknown): the client's request header, or one glassroom makes.
func (jc *jupyterConn) parentOf(id string, x *sessions.ExecInfo) *jparent {
	if x != nil && len(x.Parent) > 0 {
		p := parseParent(x.Parent)
		p.started = x.Started
		p.exec, p.owner = true, x.Owner
		return p
	}
	jc.mu.Lock()
	p := jc.own[id]
	jc.mu.Unlock()
	if p != nil {
		return p
	}
	started := time.Now()
	if x != nil {
		started = x.Started
	}
	return v1Parent(id, started)
}

// track remembers what the writer needs of execution id until its done.
func (w *jwriter) track(id string, p *jparent) {
	if len(w.parents) >= jupyterTracked { // done events were lost (a gap): forget
		w.parents, w.errs = map[string]*jparent{}, map[string]map[string]any{}
	}
	w.parents[id] = p
}

// render turns one session event into the Jupyter messages this client
// gets.
func (jc *jupyterConn) render(w *jwriter, ev sessions.Event) []*outMsg {
	iopub := func(msgType string, parent *jparent, content any) *outMsg {
		return &outMsg{channel: "iopub", msgType: msgType, parent: parent.raw, content: content}
	}
	parent := func() *jparent {
		if p := w.parents[ev.ID]; p != nil {
			return p
		}
		p := jc.parentOf(ev.ID, nil)
		w.track(ev.ID, p)
		return p
	}
	switch ev.Type {
	case sessions.EventStarted:
		p := jc.parentOf(ev.ID, ev.Exec)
		w.track(ev.ID, p)
		w.running = ev.ID
		msgs := []*outMsg{iopub("status", p, map[string]string{"execution_state": "busy"})}
		if ev.Exec != nil && !ev.Exec.Silent {
			msgs = append(msgs, iopub("execute_input", p, map[string]any{"code": ev.Exec.Code, "execution_count": ev.Exec.ExecutionCount}))
		}
		return msgs
	case sessions.EventStream:
		return []*outMsg{iopub("stream", parent(), map[string]string{"name": ev.Name, "text": ev.Text})}
	case sessions.EventDisplay, sessions.EventUpdateDisplay, sessions.EventResult:
		content := map[string]any{"data": ev.Data, "metadata": nonNull(ev.Metadata)}
		if ev.DisplayID != "" {
			content["transient"] = map[string]string{"display_id": ev.DisplayID}
		}
		msgType := "display_data"
		switch ev.Type {
		case sessions.EventUpdateDisplay:
			msgType = "update_display_data"
		case sessions.EventResult:
			msgType = "execute_result"
			content["execution_count"] = deref(ev.ExecutionCount)
		}
		return []*outMsg{iopub(msgType, parent(), content)}
	case sessions.EventError:
		content := map[string]any{"ename": ev.Name, "evalue": ev.Value, "traceback": ev.Traceback}
		p := parent()
		w.errs[ev.ID] = content
		return []*outMsg{iopub("error", p, content)}
	case sessions.EventClearOutput:
		return []*outMsg{iopub("clear_output", parent(), map[string]bool{"wait": ev.Wait})}
	case sessions.EventInputRequest:
		p := parent()
		if !jc.ownsInput(ev.ID, p) {
			return nil
		}
		// The input_reply names this message as its parent: remember its id.
		id := jc.ids.next()
		jc.mu.Lock()
		if len(jc.inputs) >= jupyterClientSessions {
			clear(jc.inputs)
		}
		jc.inputs[id] = ev.ID
		jc.mu.Unlock()
		return []*outMsg{{channel: "stdin", msgType: "input_request", parent: p.raw, msgID: id,
			content: map[string]any{"prompt": derefString(ev.Prompt), "password": ev.Password != nil && *ev.Password}}}
	case sessions.EventDone:
		return jc.renderDone(w, ev, parent())
	case sessions.EventKernel:
		return jc.renderKernel(w, ev)
	}
	return nil // queued, file, gap: nothing a Jupyter client knows
}

// renderDone ends an execution: a notice for what glassroom did to it, the
// execute_reply to its client, and status idle.
func (jc *jupyterConn) renderDone(w *jwriter, ev sessions.Event, p *jparent) []*outMsg {
	var msgs []*outMsg
	if w.running != ev.ID { // it never started (aborted, or failed before): busy first, as a kernel does
		msgs = append(msgs, status("busy", p.raw))
	}
	if note := doneNotice(ev); note != "" {
		msgs = append(msgs, &outMsg{channel: "iopub", msgType: "stream", parent: p.raw, content: map[string]string{"name": "stderr", "text": note}})
	}
	if jc.mine(ev.ID, p) {
		var content map[string]any
		switch ev.Status {
		case sessions.StatusOK:
			content = map[string]any{"status": "ok", "user_expressions": map[string]any{}, "payload": []any{}}
		case sessions.StatusAborted:
			content = map[string]any{"status": "aborted"}
		default:
			content = w.errs[ev.ID]
			if content == nil {
				content = errorReply(doneError(ev))
			}
			content = map[string]any{"status": "error", "ename": content["ename"], "evalue": content["evalue"], "traceback": content["traceback"]}
		}
		content["execution_count"] = deref(ev.ExecutionCount)
		r := reply("shell", "execute_reply", p.raw, content)
		if !p.started.IsZero() {
			r.metadata, _ = json.Marshal(map[string]any{"started": jupyterDate(p.started), "status": content["status"]})
		}
		msgs = append(msgs, r)
	}
	msgs = append(msgs, status("idle", p.raw))
	if w.running == ev.ID {
		w.running = ""
	}
	delete(w.parents, ev.ID)
	delete(w.errs, ev.ID)
	jc.mu.Lock()
	delete(jc.own, ev.ID)
	jc.mu.Unlock()
	return msgs
}

// doneNotice explains, on stderr, what glassroom did to an execution.
func doneNotice(ev sessions.Event) string {
	var note string
	switch ev.Status {
	case sessions.StatusTimeout:
		note = "glassroom: the execution timed out and was interrupted"
	case sessions.StatusDied:
		note = "glassroom: the kernel died"
	case sessions.StatusInterrupted:
		if ev.Reason != "" {
			note = "glassroom: the execution was stopped"
		}
	}
	if note != "" && ev.Reason != "" {
		note += " (" + ev.Reason + ")"
	}
	if ev.Truncated != nil && *ev.Truncated {
		if note != "" {
			note += "; "
		}
		note += "glassroom: output was truncated (per-execution output limits)"
	}
	if note != "" && ev.StateLost != nil && *ev.StateLost {
		note += "; the kernel's variables are lost"
	}
	if note == "" {
		return ""
	}
	return "\n" + note + "\n"
}

// doneError is the exception a failed execution's reply names when the
// kernel reported none.
func doneError(ev sessions.Event) (string, string) {
	reason := ev.Reason
	if reason == "" {
		reason = string(ev.Status)
	}
	switch ev.Status {
	case sessions.StatusTimeout:
		return "TimeoutError", "execution timed out: " + reason
	case sessions.StatusDied:
		return "DeadKernelError", "the kernel died: " + reason
	case sessions.StatusInterrupted:
		return "KeyboardInterrupt", reason
	}
	return "ExecutionError", reason
}

// renderKernel turns the kernel's state changes into Jupyter statuses. A
// restart someone asked for is "starting" (a new kernel); one glassroom
// did because the kernel died or ignored a timeout's interrupt is
// "restarting", which Jupyter clients show as an automatic restart. Busy
// and idle around executions come from started and done.
func (jc *jupyterConn) renderKernel(w *jwriter, ev sessions.Event) []*outMsg {
	prev := w.lastKernel
	w.lastKernel = ev.State
	switch sessions.State(ev.State) {
	case sessions.StateRestarting:
		if ev.Reason == "restart requested" {
			return []*outMsg{status("starting", nil)}
		}
		return []*outMsg{status("restarting", nil)}
	case sessions.StateDead:
		if strings.HasPrefix(ev.Reason, "restart failed") {
			return []*outMsg{status("dead", nil)}
		}
	case sessions.StateIdle:
		if prev == string(sessions.StateRestarting) || prev == string(sessions.StateDead) {
			return []*outMsg{status("idle", nil)}
		}
	}
	return nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}
