package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
)

// read owns the socket's reading side, at most wsconn.FrameRate frames a
// second (a faster client waits, slowed by TCP). A frame glassroom cannot
// act on is dropped, as a kernel drops a malformed message.
//
// Frames are read within jc.limits. Only comm_open and comm_msg may be
// large: a large message of another type ends the connection with 1009,
// as a frame above every limit does.
func (jc *conn) read(ctx context.Context) error {
	lim := jc.limits
	frames := jc.api.conns.NewReader(jc.ws, lim)
	defer frames.Close() // the comm path hands the message to the kernel before the next frame
	for {
		typ, data, err := frames.Next(ctx)
		if err != nil {
			return err
		}
		m, err := decodeFrame(data, typ == websocket.BinaryMessage, jc.v1)
		if err != nil {
			jc.api.log.Debug().Err(err).Msg("jupyter: dropped a client frame")
			continue
		}
		h, err := readHeader(m.Header)
		if err != nil {
			jc.api.log.Debug().Err(err).Msg("jupyter: dropped a client message")
			continue
		}
		if frames.Large() && h.MsgType != "comm_open" && h.MsgType != "comm_msg" {
			_ = jc.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig,
				fmt.Sprintf("only comm messages may exceed %d bytes", lim.Frame)), time.Now().Add(wsconn.WriteTimeout))
			return wsconn.Error("a large " + h.MsgType)
		}
		jc.noteSession(h.Session)
		if err := jc.handle(ctx, m, h); err != nil {
			return err
		}
	}
}

// handle acts on one client message.
func (jc *conn) handle(ctx context.Context, m *jmsg, h jheader) error {
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
			jc.commInfo(ctx, m)
		case "comm_open", "comm_msg", "comm_close":
			jc.comm(ctx, m, h)
		case "shutdown_request", "interrupt_request": // older clients send them on shell
			return jc.control(ctx, "shell", m, h)
		default: // unknown types: a kernel ignores them, busy then idle
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

func (jc *conn) control(ctx context.Context, channel string, m *jmsg, h jheader) error {
	switch h.MsgType {
	case "interrupt_request":
		jc.spawn(ctx, func(ctx context.Context) jbatch {
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			content := map[string]any{"status": "ok"}
			if err := jc.sess.First().Interrupt(ictx); err != nil {
				content = errorReply("InterruptError", httperr.Of(err).Message)
			}
			return answer(m.Header, reply(channel, "interrupt_reply", m.Header, content))
		})
	case "shutdown_request":
		return jc.shutdown(ctx, channel, m)
	case "kernel_info_request":
		jc.kernelInfo(ctx, channel, m)
	case "debug_request":
		if channel != "control" { // the debugger speaks on control only
			jc.send(ctx, answer(m.Header))
			break
		}
		jc.debug(ctx, m)
	default: // usage_request, unknown
		jc.send(ctx, answer(m.Header))
	}
	return nil
}

// spawn runs f, a request waiting on the kernel, beside the reader (at most
// maxKernelRequests at once) and hands its batch to the writer.
func (jc *conn) spawn(ctx context.Context, f func(context.Context) jbatch) {
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
		defer jc.api.conns.Recover(&err)
		b := f(ctx)
		jc.send(ctx, b)
	}()
}

// kernelInfo answers kernel_info_request with the kernel's reply, cached
// per kernel incarnation, with "debugger" as the kernel says it (the key
// JupyterLab's debugger reads; ipykernel 7 says it in supported_features
// instead): false unless the kernel says it has one.
func (jc *conn) kernelInfo(ctx context.Context, channel string, m *jmsg) {
	jc.spawn(ctx, func(ctx context.Context) jbatch {
		raw, err := jc.sess.First().KernelInfo(ctx)
		var content any
		if err != nil {
			content = errorReply("KernelInfoError", httperr.Of(err).Message)
		} else {
			var fields map[string]json.RawMessage
			if json.Unmarshal(raw, &fields) != nil || fields == nil {
				fields = map[string]json.RawMessage{}
			}
			fields["debugger"] = json.RawMessage(strconv.FormatBool(hasDebugger(fields)))
			if _, ok := fields["status"]; !ok {
				fields["status"] = json.RawMessage(`"ok"`)
			}
			content = fields
		}
		return answer(m.Header, reply(channel, "kernel_info_reply", m.Header, content))
	})
}

// hasDebugger reports whether a kernel_info_reply's fields say the kernel
// answers debug_request: "debugger": true, or "debugger" among its
// supported_features.
func hasDebugger(fields map[string]json.RawMessage) bool {
	var on bool
	if json.Unmarshal(fields["debugger"], &on) == nil && on {
		return true
	}
	var features []json.RawMessage
	_ = json.Unmarshal(fields["supported_features"], &features)
	for _, f := range features {
		if string(f) == `"debugger"` {
			return true
		}
	}
	return false
}

// debug relays a debug_request (the Jupyter debugger's Debug Adapter
// Protocol requests) to the kernel's control channel, beside the
// execution queue: the kernel answers it while a cell runs or is stopped
// at a breakpoint. The debugger's events (debug_event) come from the
// kernel on their own, with the session's other kernel messages of no
// request. A request glassroom refuses, or one the kernel fails to
// answer, gets a DAP response that says so (success false), as a
// debugger client expects.
func (jc *conn) debug(ctx context.Context, m *jmsg) {
	jc.spawn(ctx, func(ctx context.Context) jbatch {
		req, why := checkDebug(m.Content)
		if why == "" && req.Command == "initialize" {
			if _, _, running := jc.sess.First().Running(); running {
				// ipykernel starts debugpy by running code on its shell
				// from its control thread, which waits for the running
				// cell meanwhile: interrupts (control) would wait too.
				why = "start the debugger while no cell runs: the kernel starts it between cells, and would not take an interrupt while it waits"
			}
		}
		if why != "" {
			return answer(m.Header, reply("control", "debug_reply", m.Header, req.failure(why)))
		}
		r, err := jc.sess.First().KernelRequest(ctx, sessions.ControlChannel, "debug_request", m.Content)
		if err != nil {
			return answer(m.Header, reply("control", "debug_reply", m.Header, req.failure(httperr.Of(err).Message)))
		}
		msg := reply("control", r.MsgType, m.Header, r.Content)
		msg.metadata, msg.buffers = r.Metadata, r.Buffers
		return answer(m.Header, msg)
	})
}

// dapRequest is what glassroom reads of a debug_request's content.
type dapRequest struct {
	Seq       int64                      `json:"seq"`
	Command   string                     `json:"command"`
	Arguments map[string]json.RawMessage `json:"arguments"`
}

// failure is the DAP response of a request that failed with message.
func (r dapRequest) failure(message string) map[string]any {
	return map[string]any{"type": "response", "seq": 0, "request_seq": r.Seq, "success": false,
		"command": r.Command, "message": "glassroom: " + message}
}

// maxDebugCommand bounds a DAP command's name.
const maxDebugCommand = 64

// debugArguments are the arguments each command must have, by JSON kind,
// where ipykernel's own handler reads them: it answers nothing to a
// request that lacks one (the client, and a slot of this connection,
// would wait the whole wait out). Commands ipykernel passes on to debugpy
// are answered by debugpy, which checks its arguments itself.
var debugArguments = map[string]map[string]byte{
	"dumpCell":             {"code": '"'},
	"setBreakpoints":       {"source": '{', "breakpoints": '['},
	"source":               {"source": '{'},
	"attach":               {},
	"variables":            {"variablesReference": '0'},
	"richInspectVariables": {"variableName": '"'},
}

// checkDebug reads a debug_request's content and says what is wrong with
// it, or "".
func checkDebug(content json.RawMessage) (dapRequest, string) {
	var req dapRequest
	var fields map[string]json.RawMessage
	if json.Unmarshal(content, &fields) != nil || fields == nil {
		return req, "debug_request content is not a JSON object"
	}
	if json.Unmarshal(fields["seq"], &req.Seq) != nil {
		return req, "debug_request needs seq (an integer)"
	}
	if json.Unmarshal(fields["command"], &req.Command) != nil || req.Command == "" || len(req.Command) > maxDebugCommand || !printable(req.Command) {
		req.Command = ""
		return req, "debug_request needs command (a name)"
	}
	want, known := debugArguments[req.Command]
	if raw, ok := fields["arguments"]; ok || known {
		if json.Unmarshal(raw, &req.Arguments) != nil || req.Arguments == nil {
			return req, req.Command + " needs arguments (an object)"
		}
	}
	for name, kind := range want {
		if jsonKind(req.Arguments[name]) != kind {
			return req, req.Command + " needs arguments." + name + " (" + kindNames[kind] + ")"
		}
	}
	if path := req.Arguments["source"]; len(path) > 0 && (req.Command == "setBreakpoints" || req.Command == "source") {
		var src map[string]json.RawMessage
		if json.Unmarshal(path, &src) != nil || jsonKind(src["path"]) != '"' {
			return req, req.Command + " needs arguments.source.path (a string)"
		}
	}
	return req, ""
}

// kindNames name the JSON kinds jsonKind tells apart.
var kindNames = map[byte]string{'"': "a string", '0': "a number", 'b': "a boolean", '{': "an object", '[': "an array"}

// jsonKind is the kind of a JSON value: '"', '0' (a number), 'b', '{',
// '[', 'n' (null), or 0 when absent.
func jsonKind(raw json.RawMessage) byte {
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

// relay passes a request that reads the kernel's state to the kernel.
func (jc *conn) relay(ctx context.Context, m *jmsg, h jheader) {
	jc.spawn(ctx, func(ctx context.Context) jbatch {
		replyType := strings.TrimSuffix(h.MsgType, "request") + "reply"
		if why := checkRelayed(h.MsgType, m.Content); why != "" {
			return answer(m.Header, reply("shell", replyType, m.Header, errorReply("BadRequest", why)))
		}
		r, err := jc.sess.First().KernelRequest(ctx, sessions.ShellChannel, h.MsgType, m.Content)
		if err != nil {
			return answer(m.Header, reply("shell", replyType, m.Header, errorReply("KernelRequestError", httperr.Of(err).Message)))
		}
		msg := reply("shell", r.MsgType, m.Header, r.Content)
		msg.metadata, msg.buffers = r.Metadata, r.Buffers
		return answer(m.Header, msg)
	})
}

// comm sends a client's comm_open, comm_msg or comm_close to the kernel
// (Session.SendCommParent, as this connection's owner identity, with the
// client's header as the parent of what the kernel sends while handling
// it, which every connection gets from the side stream). A message the
// session refuses (malformed, another connection's comm, past the limits)
// is answered as a kernel answers one it ignores, busy then idle, so that
// a widget waiting for the idle of its last message sends the next; a
// refused comm_open is closed at once (comm_close), as a kernel closes a
// comm of an unknown target.
func (jc *conn) comm(ctx context.Context, m *jmsg, h jheader) {
	if _, err := jc.sess.First().Comms().SendCommParent(jc.owner, m.Header, h.MsgType, m.Content, m.Metadata, m.Buffers); err != nil {
		jc.api.log.Debug().Err(err).Str("msg_type", h.MsgType).Msg("jupyter: comm message refused")
		var msgs []*outMsg
		if h.MsgType == "comm_open" {
			var c struct {
				CommID string `json:"comm_id"`
			}
			if json.Unmarshal(m.Content, &c) == nil && c.CommID != "" && len(c.CommID) <= sessions.MaxCommIDBytes && printable(c.CommID) {
				msgs = append(msgs, reply("iopub", "comm_close", m.Header, map[string]any{"comm_id": c.CommID, "data": map[string]any{}}))
			}
		}
		jc.send(ctx, answer(m.Header, msgs...))
	}
}

// commInfo answers comm_info_request with the kernel's open comms (of the
// target named, if any).
func (jc *conn) commInfo(ctx context.Context, m *jmsg) {
	jc.spawn(ctx, func(ctx context.Context) jbatch {
		var req struct {
			TargetName string `json:"target_name"`
		}
		_ = json.Unmarshal(m.Content, &req)
		comms, err := jc.sess.First().Comms().CommInfo(ctx, req.TargetName)
		var content any
		if err != nil {
			content = errorReply("CommInfoError", httperr.Of(err).Message)
		} else {
			content = map[string]any{"status": "ok", "comms": comms}
		}
		return answer(m.Header, reply("shell", "comm_info_reply", m.Header, content))
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
	for k, v := range want {
		if jsonKind(fields[k]) != v {
			return msgType + " needs " + k + " (" + kindNames[v] + ")"
		}
	}
	return ""
}

// shutdown answers shutdown_request, then restarts the kernel or deletes
// the session (which ends this connection).
func (jc *conn) shutdown(ctx context.Context, channel string, m *jmsg) error {
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
		if err := jc.sess.First().Restart(ctx); err != nil {
			jc.api.log.Debug().Err(err).Msg("jupyter: restart for shutdown_request failed")
		}
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := jc.api.mgr.Delete(dctx, jc.tenant, jc.sess.ID()); err != nil {
		jc.api.log.Debug().Err(err).Msg("jupyter: delete for shutdown_request failed")
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
	// UserExpressions: names to expressions (strings; other values are
	// not expressions and are left out).
	UserExpressions map[string]json.RawMessage `json:"user_expressions"`
}

// expressions returns the request's string-valued user_expressions.
func (c executeContent) expressions() map[string]string {
	var out map[string]string
	for name, raw := range c.UserExpressions {
		var expr string
		if json.Unmarshal(raw, &expr) != nil {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(c.UserExpressions))
		}
		out[name] = expr
	}
	return out
}

// execute queues an execute_request in the session, through the
// submitter (which waits for room in the queue, in order).
func (jc *conn) execute(ctx context.Context, m *jmsg, h jheader) error {
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
		Owner: jc.owner, UserExpressions: c.expressions(),
	}
	jc.mu.Lock()
	if len(jc.own) < maxTracked {
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
func (jc *conn) submit(ctx context.Context) error {
	for req := range jc.execs {
		if _, err := jc.sess.First().SubmitWait(ctx, req); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			jc.mu.Lock()
			delete(jc.own, req.ID)
			jc.mu.Unlock()
			jc.send(ctx, jc.rejection(req.Parent, httperr.Of(err).Message))
		}
	}
	return nil
}

// rejection answers an execute_request glassroom refused: the error shows
// in the cell (iopub), and the reply says so.
func (jc *conn) rejection(parent json.RawMessage, why string) jbatch {
	content := errorReply("ExecutionRefused", why)
	content["traceback"] = []string{"glassroom refused the execution: " + why}
	return answer(parent, reply("iopub", "error", parent, content), reply("shell", "execute_reply", parent, content))
}

// inputReply answers the kernel's input_request, if it was this
// connection's: the session refuses the answer of any other (InputAs).
func (jc *conn) inputReply(m *jmsg) {
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
		rid, _, ok := jc.sess.First().Running()
		if !ok {
			jc.api.log.Debug().Msg("jupyter: input_reply while nothing runs")
			return
		}
		id = rid
	}
	if err := jc.sess.First().InputAs(jc.owner, id, c.Value); err != nil {
		jc.api.log.Debug().Err(err).Msg("jupyter: input_reply refused (no input() of this connection pending)")
	}
}
