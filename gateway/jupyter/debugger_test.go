package jupyter_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/glassroom/glassroom/testkit"
	"github.com/glassroom/glassroom/testkit/dap"
)

// The Jupyter debugger over the channels WebSocket: debug_request on
// control relayed to the kernel beside the execution queue, debug_reply
// back, debug_event on iopub.

// debugRequests: what glassroom itself does with the debugger's
// requests, on a kernel of its own: the python3 kernelspec and the
// kernel_info reply say the debugger is there; malformed and oversized
// debug_requests, and replies too large to relay, get a DAP failure (not
// silence); one is answered while a cell runs, except the debugger's
// start (initialize), which is refused until the cell ends and then
// starts debugpy in the sandbox.
func debugRequests(t *testing.T, e *env) {
	var specs struct {
		Kernelspecs map[string]struct {
			Spec struct {
				Metadata map[string]any
			}
		}
	}
	if st := e.jupyterCall("token "+keyA, "GET", "/api/kernelspecs", nil, &specs); st != http.StatusOK ||
		specs.Kernelspecs["python3"].Spec.Metadata["debugger"] != true {
		t.Fatalf("kernelspecs: %d %+v, want python3's metadata to say debugger: true", st, specs)
	}
	for name, s := range specs.Kernelspecs {
		if _, ok := s.Spec.Metadata["debugger"]; ok && name != "python3" {
			t.Errorf("kernelspec %s says it has the debugger: %+v", name, s.Spec.Metadata)
		}
	}
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, false, "session_id="+randomHex(8))
	if info, _ := c.request("control", "kernel_info_request", map[string]any{}); info.Content["debugger"] != true {
		t.Fatalf("kernel_info_reply: %v, want debugger: true", info)
	}
	dbg := func(content any) jm {
		t.Helper()
		rep, all := c.request("control", "debug_request", content)
		if rep.Channel != "control" || rep.Header.MsgType != "debug_reply" || find(t, all, "status").Content["execution_state"] != "busy" {
			t.Fatalf("debug_reply %v among %v", rep, all)
		}
		return rep
	}
	big := strings.Repeat("x", e.g.Manager.Config().MaxCodeBytes+100<<10)
	for _, bad := range []struct {
		content any
		why     string
	}{
		{map[string]any{"command": "debugInfo"}, "seq"},
		{map[string]any{"seq": 1, "type": "request"}, "command"},
		{map[string]any{"seq": 1, "command": strings.Repeat("c", 65)}, "command"},
		{map[string]any{"seq": 1, "command": "dumpCell"}, "arguments"},
		{map[string]any{"seq": 1, "command": "dumpCell", "arguments": map[string]any{"code": 1}}, "arguments.code"},
		{map[string]any{"seq": 1, "command": "attach", "arguments": []any{}}, "arguments"},
		{map[string]any{"seq": 1, "command": "setBreakpoints", "arguments": map[string]any{"source": map[string]any{}, "breakpoints": []any{}}}, "source.path"},
		{map[string]any{"seq": 1, "command": "variables", "arguments": map[string]any{"variablesReference": "1"}}, "variablesReference"},
		{map[string]any{"seq": 1, "command": "dumpCell", "arguments": map[string]any{"code": big}}, "exceeds"},
	} {
		rep := dbg(bad.content)
		msg, _ := rep.Content["message"].(string)
		if rep.Content["success"] != false || rep.Content["type"] != "response" || !strings.HasPrefix(msg, "glassroom: ") || !strings.Contains(msg, bad.why) {
			t.Errorf("debug_request %.200v: %v, want a DAP failure about %s", bad.content, rep, bad.why)
		}
	}

	// A reply over the control channel's ceiling is a failure that says so.
	if rep, _ := c.execute("x = 'a' * 400_000"); rep.Content["status"] != "ok" {
		t.Fatalf("x: %v", rep)
	}
	rep := dbg(map[string]any{"seq": 1, "type": "request", "command": "richInspectVariables", "arguments": map[string]any{"variableName": "x"}})
	if msg, _ := rep.Content["message"].(string); rep.Content["success"] != false || !strings.Contains(msg, "larger than glassroom relays") {
		t.Fatalf("richInspectVariables of a 400 kB string: %v", rep)
	}

	// While a cell runs: answered at once (the cell runs 60 s, interrupted
	// below); the debugger's start is refused.
	id := c.send("shell", "execute_request", map[string]any{"code": "import time\nfor _ in range(1200): time.sleep(0.05)"})
	c.until("execute_input", func(m jm) bool { return m.Header.MsgType == "execute_input" && m.Parent.MsgID == id })
	info := dbg(map[string]any{"seq": 1, "type": "request", "command": "debugInfo", "arguments": map[string]any{}})
	body, _ := info.Content["body"].(map[string]any)
	if info.Content["success"] != true || body["isStarted"] != false || body["hashMethod"] != "Murmur2" {
		t.Fatalf("debugInfo while a cell runs: %v", info)
	}
	initialize := map[string]any{"seq": 2, "type": "request", "command": "initialize", "arguments": map[string]any{
		"clientID": "test", "adapterID": "python", "pathFormat": "path", "linesStartAt1": true, "columnsStartAt1": true}}
	if rep := dbg(initialize); rep.Content["success"] != false || !strings.Contains(rep.Content["message"].(string), "while no cell runs") {
		t.Fatalf("initialize while a cell runs: %v", rep)
	}
	if rep, _ := c.request("control", "interrupt_request", map[string]any{}); rep.Content["status"] != "ok" {
		t.Fatalf("interrupt_reply %v", rep)
	}
	if rep, _ := c.await(id, "the interrupted cell"); rep.Content["ename"] != "KeyboardInterrupt" {
		t.Fatalf("the cell: %v", rep)
	}
	// The session names the cell as running until just after its reply.
	testkit.Eventually(t, dap.Wait, func() bool {
		var m kernelModel
		return e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+k.ID, nil, &m) == http.StatusOK && m.ExecutionState == "idle"
	}, "the kernel idle after the interrupted cell")
	if rep := dbg(initialize); rep.Content["success"] != true {
		t.Fatalf("initialize: %v", rep)
	}
	if rep := dbg(map[string]any{"seq": 3, "type": "request", "command": "debugInfo", "arguments": map[string]any{}}); rep.Content["body"].(map[string]any)["isStarted"] != true {
		t.Fatalf("debugInfo after initialize: %v", rep)
	}
	if rep := dbg(map[string]any{"seq": 4, "type": "request", "command": "disconnect", "arguments": map[string]any{"restart": false, "terminateDebuggee": false}}); rep.Content["success"] != true {
		t.Fatalf("disconnect: %v", rep)
	}
}

// debuggerSession: JupyterLab's debugger session (dap.Script) through the
// channels WebSocket, on a kernel of its own.
func debuggerSession(t *testing.T, e *env) {
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, true, "session_id="+randomHex(8))
	dap.Script(t, newJupyterDebugger(c))
}

// jupyterDebugger is the dap.Kernel of a channels connection: one
// goroutine reads every message and hands debug_replies to their
// requests, debug_events to Event, a cell's stdout, reply and idle to its
// Run. It owns the connection's messages (jclient.until must not be used
// beside it) and ends when the connection closes.
type jupyterDebugger struct {
	c      *jclient
	events chan json.RawMessage

	mu      sync.Mutex
	replies map[string]chan jm // by request msg_id
	runs    map[string]*jrun   // by execute_request msg_id
	closed  bool
}

type jrun struct {
	stdout strings.Builder
	reply  *jm
	idle   bool
	done   chan dap.Result
}

func newJupyterDebugger(c *jclient) *jupyterDebugger {
	d := &jupyterDebugger{c: c, events: make(chan json.RawMessage, 1024), replies: map[string]chan jm{}, runs: map[string]*jrun{}}
	go d.read()
	return d
}

var errConnectionEnded = errors.New("the channels connection ended")

func (d *jupyterDebugger) read() {
	defer func() {
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		close(d.events)
	}()
	for m := range d.c.in {
		d.mu.Lock()
		if ch := d.replies[m.Parent.MsgID]; ch != nil && m.Header.MsgType == "debug_reply" {
			ch <- m
			delete(d.replies, m.Parent.MsgID)
		}
		if r := d.runs[m.Parent.MsgID]; r != nil {
			switch {
			case m.Header.MsgType == "stream" && m.Content["name"] == "stdout":
				text, _ := m.Content["text"].(string)
				r.stdout.WriteString(text)
			case m.Header.MsgType == "execute_reply":
				r.reply = &m
			case m.Header.MsgType == "status" && m.Content["execution_state"] == "idle":
				r.idle = true
			}
			if r.reply != nil && r.idle {
				res := dap.Result{Stdout: r.stdout.String()}
				if r.reply.Content["status"] != "ok" {
					res.Err = &dap.CellError{Status: r.reply.Content["status"].(string), EName: fmtAny(r.reply.Content["ename"]), EValue: fmtAny(r.reply.Content["evalue"])}
				}
				r.done <- res
				delete(d.runs, m.Parent.MsgID)
			}
		}
		d.mu.Unlock()
		if m.Channel == "iopub" && m.Header.MsgType == "debug_event" {
			select {
			case d.events <- json.RawMessage(m.RawJSON):
			default: // 1024 unread events: the script's own wait reports the missing one
			}
		}
	}
}

func fmtAny(v any) string {
	s, _ := v.(string)
	return s
}

func (d *jupyterDebugger) Debug(ctx context.Context, req map[string]any) (json.RawMessage, error) {
	h := d.c.header("debug_request")
	ch := make(chan jm, 1)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errConnectionEnded
	}
	d.replies[h["msg_id"].(string)] = ch
	d.mu.Unlock()
	d.c.sendWith("control", h, req)
	select {
	case m := <-ch:
		return json.RawMessage(m.RawJSON), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *jupyterDebugger) Event(ctx context.Context) (json.RawMessage, error) {
	select {
	case ev, ok := <-d.events:
		if !ok {
			return nil, errConnectionEnded
		}
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *jupyterDebugger) Run(code string) <-chan dap.Result {
	h := d.c.header("execute_request")
	r := &jrun{done: make(chan dap.Result, 1)}
	d.mu.Lock()
	d.runs[h["msg_id"].(string)] = r
	d.mu.Unlock()
	d.c.sendWith("shell", h, map[string]any{"code": code, "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true})
	return r.done
}
