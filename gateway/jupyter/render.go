package jupyter

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/wsconn"
	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
)

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
func (jc *conn) write(ctx context.Context) error {
	since := jc.sess.LastSeq()
	if jc.client != "" {
		if seq, ok := jc.api.resume.take(jc.tenant, jc.sess.ID(), jc.client); ok {
			since = seq // a client that reconnects gets what it missed
		}
	}
	stream := jc.sess.Stream(ctx, since)
	defer stream.Close()
	w := &jwriter{parents: map[string]*jparent{}, errs: map[string]map[string]any{}, lastSent: since}
	defer func() {
		if jc.client != "" {
			jc.api.resume.put(jc.tenant, jc.sess.ID(), jc.client, w.lastSent)
		}
	}()
	if err := jc.writeMsgs(jc.initialStatus(w)); err != nil {
		return err
	}
	ping := time.NewTicker(jc.api.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return jc.ended(ctx)
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
		case it, ok := <-stream.C:
			if !ok {
				if ctx.Err() != nil {
					return jc.ended(ctx)
				}
				_ = jc.writeMsgs([]*outMsg{status("dead", nil)})
				_ = jc.ws.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, "kernel shut down"), time.Now().Add(time.Second))
				return wsconn.ErrSessionEnded
			}
			if it.Side != nil {
				if it.Side.Context != "" { // a Jupyter kernel is the session's first
					continue
				}
				if err := jc.writeMsgs(jc.renderSide(w, *it.Side)); err != nil {
					return err
				}
				continue
			}
			if err := jc.writeMsgs(jc.render(w, *it.Event)); err != nil {
				return err
			}
			w.lastSent = it.Event.Seq
		case <-ping.C:
			if err := jc.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsconn.WriteTimeout)); err != nil {
				return err
			}
		}
	}
}

// ended tells the client that the gateway is shutting down, if it is,
// once the connection's context has ended; it returns ctx's error.
func (jc *conn) ended(ctx context.Context) error {
	if jc.api.conns.ShuttingDown() {
		_ = jc.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, "gateway shutting down"), time.Now().Add(time.Second))
	}
	return ctx.Err()
}

// renderSide renders a message of the kernel's side stream (comm traffic,
// a comm handler's output and status, debug_event) as the iopub message
// it is, for every connection: its msg_id is the kernel's, its parent the
// header of the client's comm message when the session knows it. A
// handler's idle while a cell runs is followed by busy again, as after
// the replies this face makes.
func (jc *conn) renderSide(w *jwriter, m sessions.SideMessage) []*outMsg {
	msgs := []*outMsg{{channel: "iopub", msgType: m.MsgType, parent: m.Parent, metadata: m.Metadata,
		content: m.Content, buffers: m.Buffers, msgID: m.MsgID}}
	if p := w.parents[w.running]; m.MsgType == "status" && p != nil {
		msgs = append(msgs, status("busy", p.raw))
	}
	return msgs
}

func (jc *conn) writeMsgs(msgs []*outMsg) error {
	session := jc.sess.First().KernelSession()
	now := time.Now()
	for _, m := range msgs {
		id := m.msgID
		if id == "" {
			id = jc.ids.next()
		}
		data, binaryFrame, err := encode(m, id, session, now, jc.v1)
		if err != nil {
			jc.api.log.Warn().Err(err).Str("msg_type", m.msgType).Msg("jupyter: could not encode a message")
			continue
		}
		typ := websocket.TextMessage
		if binaryFrame {
			typ = websocket.BinaryMessage
		}
		_ = jc.ws.SetWriteDeadline(time.Now().Add(wsconn.WriteTimeout))
		if err := jc.ws.WriteMessage(typ, data); err != nil {
			return err
		}
	}
	return nil
}

// initialStatus tells a new connection the kernel's state, as a kernel's
// status messages would have.
func (jc *conn) initialStatus(w *jwriter) []*outMsg {
	switch jc.sess.Info().State {
	case sessions.StateBusy:
		if id, x, ok := jc.sess.First().Running(); ok {
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
func (jc *conn) parentOf(id string, x *sessions.ExecInfo) *jparent {
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
	if len(w.parents) >= maxTracked { // done events were lost (a gap): forget
		w.parents, w.errs = map[string]*jparent{}, map[string]map[string]any{}
	}
	w.parents[id] = p
}

// render turns one session event into the Jupyter messages this client
// gets.
func (jc *conn) render(w *jwriter, ev sessions.Event) []*outMsg {
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
		if len(jc.inputs) >= maxClientSessions {
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
func (jc *conn) renderDone(w *jwriter, ev sessions.Event, p *jparent) []*outMsg {
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
			var ue any = map[string]any{}
			if ev.UserExpressions != nil {
				ue = ev.UserExpressions
			}
			payload := []json.RawMessage{}
			if ev.Payload != nil {
				payload = ev.Payload
			}
			content = map[string]any{"status": "ok", "user_expressions": ue, "payload": payload}
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
			r.metadata, _ = json.Marshal(map[string]any{"started": formatDate(p.started), "status": content["status"]})
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
func (jc *conn) renderKernel(w *jwriter, ev sessions.Event) []*outMsg {
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
