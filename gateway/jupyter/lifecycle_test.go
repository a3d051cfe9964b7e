package jupyter_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
)

// queueSemantics: executions from a Jupyter client go through the
// session's queue: stop_on_error, interrupts, timeouts.
func queueSemantics(t *testing.T, e *env) {
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, false, "")
	c.request("shell", "kernel_info_request", map[string]any{}) // as every client does first
	c.execute("import time")
	// stop_on_error: a failed execution aborts the client's queued ones.
	first := c.send("shell", "execute_request", map[string]any{"code": "time.sleep(0.5)\n1/0", "stop_on_error": true})
	second := c.send("shell", "execute_request", map[string]any{"code": "print('should not run')"})
	rep1, _ := c.await(first, "first")
	rep2, all := c.await(second, "second")
	if rep1.Content["ename"] != "ZeroDivisionError" || rep2.Content["status"] != "aborted" || strings.Contains(streamText(all), "should not run") {
		t.Fatalf("stop_on_error: %v / %v %v", rep1, rep2, all)
	}
	// without it, the next one runs.
	first = c.send("shell", "execute_request", map[string]any{"code": "time.sleep(0.5)\n1/0", "stop_on_error": false})
	second = c.send("shell", "execute_request", map[string]any{"code": "print('runs')"})
	c.await(first, "first")
	if rep, all := c.await(second, "second"); rep.Content["status"] != "ok" || !strings.Contains(streamText(all), "runs") {
		t.Fatalf("without stop_on_error: %v %v", rep, all)
	}
	// An interrupt sent the moment execute_input arrives is not lost.
	for range 3 {
		id := c.send("shell", "execute_request", map[string]any{"code": "while True: pass"})
		c.until("execute_input", func(m jm) bool { return m.Header.MsgType == "execute_input" && m.Parent.MsgID == id })
		if st := e.jupyterCall("token "+keyA, "POST", "/api/kernels/"+k.ID+"/interrupt", nil, nil); st != http.StatusNoContent {
			t.Fatalf("interrupt: %d", st)
		}
		// (not the execution timeout's interrupt, which would say so)
		if rep, all := c.await(id, "loop"); rep.Content["ename"] != "KeyboardInterrupt" || strings.Contains(streamText(all), "timed out") {
			t.Fatalf("interrupted loop: %v %v", rep, all)
		}
	}
	// interrupt_request on control does the same.
	id := c.send("shell", "execute_request", map[string]any{"code": "while True: pass"})
	c.until("execute_input", func(m jm) bool { return m.Header.MsgType == "execute_input" && m.Parent.MsgID == id })
	if rep, _ := c.request("control", "interrupt_request", map[string]any{}); rep.Content["status"] != "ok" || rep.Channel != "control" {
		t.Fatalf("interrupt_reply %v", rep)
	}
	if rep, _ := c.await(id, "loop"); rep.Content["ename"] != "KeyboardInterrupt" {
		t.Fatalf("loop after interrupt_request: %v", rep)
	}
	// A request waiting on a busy kernel is answered after the cell, and
	// the client is told again that the kernel is busy.
	id = c.send("shell", "execute_request", map[string]any{"code": "time.sleep(1)"})
	c.until("execute_input", func(m jm) bool { return m.Header.MsgType == "execute_input" && m.Parent.MsgID == id })
	_, all = c.request("shell", "kernel_info_request", map[string]any{})
	if last := all[len(all)-1]; last.Parent.MsgID == id {
		t.Fatalf("the execution ended before the kernel_info reply: %v", all)
	}
	got := c.until("busy again", func(m jm) bool { return m.Header.MsgType == "status" })
	if s := got[len(got)-1]; s.Content["execution_state"] != "busy" || s.Parent.MsgID != id {
		t.Fatalf("after a reply during a cell: %v", got)
	}
	c.await(id, "sleep")
}

// lifecycle: timeouts, restarts and shutdowns over the channels, culling.
func lifecycle(t *testing.T, e *env) {
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, false, "")
	sid := strings.ReplaceAll(k.ID, "-", "")
	c.execute("v = 1")
	// A restart someone else asks for: the client sees the new kernel start.
	if st := e.call(keyA, "POST", "/v1/sessions/"+sid+"/restart", nil, nil); st != http.StatusNoContent {
		t.Fatalf("restart: %d", st)
	}
	got := c.until("idle after the restart", func(m jm) bool { return m.Header.MsgType == "status" && m.Content["execution_state"] == "idle" })
	if s := find(t, got, "status"); s.Content["execution_state"] != "starting" {
		t.Fatalf("restart statuses %v", got)
	}
	if rep, _ := c.execute("v"); rep.Content["ename"] != "NameError" {
		t.Fatalf("v after restart: %v", rep)
	}
	// shutdown_request with restart.
	c.execute("v = 2")
	if rep, _ := c.request("control", "shutdown_request", map[string]any{"restart": true}); rep.Content["restart"] != true || rep.Content["status"] != "ok" {
		t.Fatalf("shutdown_reply %v", rep)
	}
	c.until("the restarted kernel", func(m jm) bool {
		return m.Header.MsgType == "status" && m.Content["execution_state"] == "idle" && m.Parent.MsgID == ""
	})
	if rep, _ := c.execute("v"); rep.Content["ename"] != "NameError" {
		t.Fatalf("v after shutdown_request(restart): %v", rep)
	}
	// shutdown_request without restart ends the session and the connection.
	if rep, _ := c.request("control", "shutdown_request", map[string]any{"restart": false}); rep.Content["restart"] != false {
		t.Fatalf("shutdown_reply %v", rep)
	}
	c.until("dead", func(m jm) bool { return m.Header.MsgType == "status" && m.Content["execution_state"] == "dead" })
	if _, ok := c.next(10 * time.Second); ok {
		t.Fatal("the connection outlived its kernel")
	}
	if st := e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+k.ID, nil, nil); st != http.StatusNotFound {
		t.Fatalf("kernel after shutdown_request: %d", st)
	}

	// A culled kernel is a 404, as jupyter_server expects.
	s := e.create(keyA, 2*time.Second)
	c = e.channels(t, keyA, kernelIDOf(s.ID), true, "")
	c.until("dead", func(m jm) bool { return m.Header.MsgType == "status" && m.Content["execution_state"] == "dead" })
	var je jupyterErr
	if st := e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+kernelIDOf(s.ID), nil, &je); st != http.StatusNotFound || je.Reason != "Not Found" {
		t.Fatalf("culled kernel: %d %+v", st, je)
	}
	if _, err := tryDialJupyter(e.channelsURL(kernelIDOf(s.ID), ""), http.Header{"Authorization": {"token " + keyA}}, false); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("channels of a culled kernel: %v", err)
	}
}

// TestJupyterTimeout: glassroom's execution timeout applies to Jupyter
// executions, and the cell says what happened. The grace is the
// default: a kernel slow to raise KeyboardInterrupt on a loaded machine
// is interrupted again, not restarted (sessions' timeout tests). The
// timeout leaves the 3 MB flood below time to finish.
func TestJupyterTimeout(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{ExecTimeout: 5 * time.Second})
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, false, "")
	rep, iopub := c.execute("import time\nwhile True: time.sleep(0.05)")
	if rep.Content["status"] != "error" || rep.Content["ename"] != "KeyboardInterrupt" || !strings.Contains(streamText(iopub), "timed out") {
		t.Fatalf("timeout: %v %v", rep, iopub)
	}
	rep, iopub = c.execute("for i in range(3000): print('x' * 1000)")
	if rep.Content["status"] != "ok" || !strings.Contains(streamText(iopub), "output was truncated") {
		t.Fatalf("flood: %v (%d messages)", rep, len(iopub))
	}
}

// TestJupyterPausedKernel: a kernel frozen for going unused answers a
// Jupyter client's requests (they thaw it, as a /v1 completion does).
func TestJupyterPausedKernel(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{PauseAfter: 600 * time.Millisecond, ReapInterval: 50 * time.Millisecond})
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, false, "")
	c.request("shell", "kernel_info_request", map[string]any{})
	c.execute("x = 41")
	sid := strings.ReplaceAll(k.ID, "-", "")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s, err := e.client(keyA).GetSession(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		if s.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel was never paused within 20s: last %+v", s)
		}
	}
	start := time.Now()
	if rep, _ := c.request("shell", "complete_request", map[string]any{"code": "impo", "cursor_pos": 4}); !strings.Contains(rep.RawJSON, `"import"`) {
		t.Fatalf("complete on a paused kernel: %v", rep)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("complete on a paused kernel took %v", d)
	}
	if _, iopub := c.execute("x + 1"); resultText(t, iopub) != "42" {
		t.Fatalf("x + 1 after the pause: %v", iopub)
	}
}

// payloadsAndExpressions: execute_reply carries the kernel's payloads (the
// pager of len?, the next input of %load) and the user_expressions it
// evaluated, as a kernel's own reply does.
func payloadsAndExpressions(t *testing.T, e *env) {
	k := e.startKernel(keyA, nil)
	c := e.channels(t, keyA, k.ID, false, "")
	rep, _ := c.request("shell", "execute_request", map[string]any{"code": "z = 20", "silent": false, "store_history": true,
		"user_expressions": map[string]any{"more": "z + 1", "not code": 7}, "allow_stdin": false, "stop_on_error": true})
	ue, _ := rep.Content["user_expressions"].(map[string]any)
	more, _ := ue["more"].(map[string]any)
	data, _ := more["data"].(map[string]any)
	if rep.Content["status"] != "ok" || data["text/plain"] != "21" || len(ue) != 1 {
		t.Fatalf("user_expressions: %v", rep.Content)
	}
	source := func(rep jm) string {
		payload, _ := rep.Content["payload"].([]any)
		if len(payload) != 1 {
			t.Fatalf("payload: %v", rep.Content)
		}
		p, _ := payload[0].(map[string]any)
		s, _ := p["source"].(string)
		return s
	}
	if rep, _ := c.execute("len?"); source(rep) != "page" {
		t.Fatalf("len?: %v", rep.Content)
	}
	c.execute("open('loadme.py', 'w').write('print(1)')")
	if rep, _ := c.execute("%load loadme.py"); source(rep) != "set_next_input" {
		t.Fatalf("%%load: %v", rep.Content)
	}
	if rep, _ := c.execute("1"); len(rep.Content["payload"].([]any)) != 0 || len(rep.Content["user_expressions"].(map[string]any)) != 0 {
		t.Fatalf("a plain cell: %v", rep.Content)
	}
}
