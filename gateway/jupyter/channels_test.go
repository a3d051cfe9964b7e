package jupyter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// channelsFlow: a notebook's use of a kernel over one connection.
func channelsFlow(t *testing.T, e *env, id string, v1 bool) {
	c := e.channels(t, keyA, id, v1, "session_id="+randomHex(8))
	info, msgs := c.request("shell", "kernel_info_request", map[string]any{})
	if info.Header.MsgType != "kernel_info_reply" || info.Content["status"] != "ok" || info.Content["protocol_version"] == nil ||
		info.Content["implementation"] != "ipython" || info.Content["debugger"] != true || info.Channel != "shell" {
		t.Fatalf("kernel info %v", info)
	}
	if s := find(t, msgs, "status"); s.Content["execution_state"] != "busy" || s.Parent.MsgID != info.Parent.MsgID {
		t.Fatalf("no busy before the kernel_info reply: %v", msgs)
	}
	if info, _ := c.request("control", "kernel_info_request", map[string]any{}); info.Channel != "control" || info.Content["implementation"] != "ipython" {
		t.Fatalf("kernel info on control %v", info)
	}
	session := info.Header.Session
	rep, iopub := c.execute("x = 41")
	if rep.Content["status"] != "ok" || rep.Channel != "shell" || len(iopub) != 3 {
		t.Fatalf("x = 41: %v %v", rep, iopub)
	}
	count := find(t, iopub, "execute_input").Content["execution_count"].(float64)
	rep, iopub = c.execute("x + 1")
	if resultText(t, iopub) != "42" || rep.Content["execution_count"] != count+1 ||
		find(t, iopub, "execute_result").Content["execution_count"] != count+1 || find(t, iopub, "execute_input").Content["execution_count"] != count+1 {
		t.Fatalf("x + 1: %v %v", rep, iopub)
	}
	for _, m := range append(iopub, rep) {
		if m.Header.Session != session || m.Header.Version != "5.3" || !lastActivityFormat.MatchString(m.Header.Date) || m.Header.MsgID == "" {
			t.Fatalf("header %+v (kernel session %s)", m.Header, session)
		}
		if m.Binary != v1 {
			t.Fatalf("framing of %v: binary %v", m, m.Binary)
		}
	}
	// Binary data survives: the PNG decodes.
	_, iopub = c.execute("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
	d := find(t, iopub, "display_data")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(d.Content["data"].(map[string]any)["image/png"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("the plot is not a PNG: %v", err)
	}
	rep, iopub = c.execute("1/0")
	if rep.Content["status"] != "error" || rep.Content["ename"] != "ZeroDivisionError" || find(t, iopub, "error").Content["ename"] != "ZeroDivisionError" {
		t.Fatalf("1/0: %v %v", rep, iopub)
	}
	// A message with binary buffers (a binary frame in the legacy
	// framing) is understood; the buffers mean nothing to an execution.
	rep, all := c.request("shell", "execute_request", map[string]any{"code": "print('buffers ok')"}, []byte{0, 1, 2, 255}, []byte("\x89PNG"))
	if rep.Content["status"] != "ok" || !strings.Contains(streamText(all), "buffers ok") {
		t.Fatalf("execute with buffers: %v %v", rep, all)
	}
	// silent: no execute_input, no result, the count stays.
	rep, all = c.request("shell", "execute_request", map[string]any{"code": "x + 100", "silent": true})
	for _, m := range all {
		if m.Header.MsgType == "execute_input" || m.Header.MsgType == "execute_result" {
			t.Fatalf("silent execution published %v", m)
		}
	}
	if _, iopub := c.execute("x"); find(t, iopub, "execute_input").Content["execution_count"] != count+5 {
		t.Fatalf("count after a silent execution: %v", iopub)
	}
	// input() over stdin.
	reqID := c.send("shell", "execute_request", map[string]any{"code": "print('hello', input('who? '))", "allow_stdin": true})
	got := c.until("input_request", func(m jm) bool { return m.Header.MsgType == "input_request" })
	ir := got[len(got)-1]
	if ir.Channel != "stdin" || ir.Content["prompt"] != "who? " || ir.Parent.MsgID != reqID {
		t.Fatalf("input_request %v", ir)
	}
	c.sendWith("stdin", map[string]any{"msg_id": randomHex(8), "msg_type": "input_reply", "session": c.session, "username": "t", "version": "5.3"},
		map[string]any{"value": "ada"}) // without a parent header: the input of the client's running execution
	if _, all := c.await(reqID, "execute_request"); !strings.Contains(streamText(all), "hello ada") {
		t.Fatalf("input echo: %v", all)
	}
	if rep, _ := c.request("shell", "execute_request", map[string]any{"code": "input()", "allow_stdin": false}); rep.Content["ename"] != "StdinNotImplementedError" {
		t.Fatalf("input() without stdin: %v", rep)
	}
	// Requests that read the kernel's state go to the kernel.
	if rep, _ := c.request("shell", "complete_request", map[string]any{"code": "impo", "cursor_pos": 4}); rep.Header.MsgType != "complete_reply" ||
		!strings.Contains(rep.RawJSON, `"import"`) {
		t.Fatalf("complete: %v", rep)
	}
	if rep, _ := c.request("shell", "inspect_request", map[string]any{"code": "len", "cursor_pos": 3, "detail_level": 0}); rep.Content["found"] != true {
		t.Fatalf("inspect: %v", rep)
	}
	if rep, _ := c.request("shell", "is_complete_request", map[string]any{"code": "for i in x:"}); rep.Content["status"] != "incomplete" {
		t.Fatalf("is_complete: %v", rep)
	}
	if rep, _ := c.request("shell", "history_request", map[string]any{"hist_access_type": "tail", "n": 3, "output": false, "raw": true}); rep.Content["status"] != "ok" {
		t.Fatalf("history: %v", rep)
	}
	if rep, _ := c.request("shell", "complete_request", map[string]any{"code": 7}); rep.Content["status"] != "error" {
		t.Fatalf("a bad complete_request: %v", rep)
	}
	// Comms go to the kernel (comms_test.go has widgets): no comm of a
	// target nobody registered is open; the kernel closes a comm opened to
	// it, with the client's comm_open as the parent; a comm_msg to the
	// closed comm is refused, answered busy then idle.
	if rep, _ := c.request("shell", "comm_info_request", map[string]any{"target_name": "nobody.registered"}); rep.Content["status"] != "ok" || len(rep.Content["comms"].(map[string]any)) != 0 {
		t.Fatalf("comm_info: %v", rep)
	}
	openID := c.send("shell", "comm_open", map[string]any{"comm_id": "c1", "target_name": "nobody.registered", "data": map[string]any{}})
	got = c.until("comm_close", func(m jm) bool { return m.Header.MsgType == "comm_close" && m.Parent.MsgID == openID })
	if cl := got[len(got)-1]; cl.Channel != "iopub" || cl.Content["comm_id"] != "c1" {
		t.Fatalf("comm_close %v", cl)
	}
	c.until("idle after comm_open", func(m jm) bool { return m.Parent.MsgID == openID && m.Content["execution_state"] == "idle" })
	msgID := c.send("shell", "comm_msg", map[string]any{"comm_id": "c1", "data": map[string]any{}})
	c.until("idle after comm_msg", func(m jm) bool { return m.Parent.MsgID == msgID && m.Content["execution_state"] == "idle" })
	// What cannot be understood is dropped; the connection lives.
	if v1 {
		c.raw(websocket.TextMessage, []byte(`{"channel":"shell"}`))
		c.raw(websocket.BinaryMessage, []byte{255, 255, 255, 255, 0, 0, 0, 0, 1, 2})
	} else {
		c.raw(websocket.TextMessage, []byte(`{not json`))
		c.raw(websocket.BinaryMessage, []byte{0, 0, 0, 9, 0, 0, 0, 1})
		c.raw(websocket.TextMessage, []byte(`{"channel":"shell","header":{"msg_id":"a"},"content":{}}`)) // no msg_type
		c.raw(websocket.TextMessage, []byte(`{"channel":"shell","header":{"msg_id":"a","msg_type":"execute_request"},"content":[]}`))
	}
	c.send("nowhere", "execute_request", map[string]any{"code": "print('lost')"})
	c.send("iopub", "execute_request", map[string]any{"code": "print('lost')"})
	if rep, iopub := c.execute("x * 3"); resultText(t, iopub) != "123" || rep.Content["status"] != "ok" {
		t.Fatalf("after bad frames: %v %v", rep, iopub)
	}
}

// twoFaces: several connections, /v1 executions on the Jupyter face and
// Jupyter executions on /v1, replies routed to their client, reconnects.
func twoFaces(t *testing.T, e *env, id string) {
	a := e.channels(t, keyA, id, false, "session_id=client-a")
	b := e.channels(t, keyA, id, true, "session_id=client-b")
	w := e.ws(keyA, strings.ReplaceAll(id, "-", ""))
	// The previous subtests' connections were closed by their clients; the
	// gateway counts them out when it sees the close, which may come later.
	var m kernelModel
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+id, nil, &m); m.Connections == 3 || time.Now().After(deadline) {
			break
		}
	}
	if m.Connections != 3 {
		t.Errorf("connections never 3 within 15s: last %d", m.Connections)
	}
	rep, _ := a.execute("z = 'from a'\nz")
	reqID := rep.Parent.MsgID
	got := b.until("a's result on b", func(m jm) bool {
		return m.Header.MsgType == "status" && m.Parent.MsgID == reqID && m.Content["execution_state"] == "idle"
	})
	if resultText(t, got) != "'from a'" {
		t.Fatalf("b saw %v", got)
	}
	for _, m := range got {
		if m.Header.MsgType == "execute_reply" {
			t.Fatalf("b got a's reply: %v", m)
		}
	}
	// The /v1 face sees the Jupyter execution, under the request's msg_id.
	evs := w.until(doneFor(reqID))
	if evs[len(evs)-1].Status != "ok" {
		t.Fatalf("/v1 saw %+v", evs)
	}
	// A /v1 execution shows on the Jupyter face, its msg_id the execution id.
	w.send(map[string]any{"type": "execute", "id": "from-v1", "code": "z + ' and v1'"})
	got = a.until("the /v1 execution", func(m jm) bool { return m.Parent.MsgID == "from-v1" && m.Content["execution_state"] == "idle" })
	if resultText(t, got) != "'from a and v1'" || find(t, got, "execute_input").Content["code"] != "z + ' and v1'" {
		t.Fatalf("a saw %v", got)
	}
	// A client that reconnects with its session_id gets what it missed,
	// its reply included. The cell goes on only once a's connection has
	// ended (its position saved), and a comes back once the /v1 face has
	// seen the output a missed: that output is sent while a is away,
	// however slowly the gateway sees a go or a comes back. The cell ends
	// once a is back.
	a.send("shell", "execute_request", map[string]any{"code": "print('before')\nimport os, time\n" +
		"while not os.path.exists('a-is-away'): time.sleep(0.02)\nprint('while a was away', flush=True)\n" +
		"while not os.path.exists('a-is-back'): time.sleep(0.02)"})
	missed := a.until("the first output", func(m jm) bool { return m.Header.MsgType == "stream" })[0].Parent.MsgID
	a.close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+id, nil, &m); m.Connections == 2 {
			break // a's connection has ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's connection did not end within 10s: last %+v", m)
		}
	}
	sid := strings.ReplaceAll(id, "-", "")
	touch := func(name string) {
		t.Helper()
		if _, err := e.client(keyA).WriteFile(context.Background(), sid, name, strings.NewReader(""), 0); err != nil {
			t.Fatal(err)
		}
	}
	touch("a-is-away")
	w.until(func(f frame) bool {
		return f.Type == "stream" && f.ID == missed && strings.Contains(f.Text, "while a was away")
	})
	a2 := e.channels(t, keyA, id, false, "session_id=client-a")
	back := a2.sync() // the gateway serves a2: the reply, when it comes, is a2's
	touch("a-is-back")
	rep, got = a2.await(missed, "the missed execution")
	got = append(back, got...)
	if !strings.Contains(streamText(got), "while a was away") || strings.Contains(streamText(got), "before") || rep.Content["status"] != "ok" {
		t.Fatalf("reconnected client got %v", got)
	}
	// A new client (another session_id) starts from now.
	c := e.channels(t, keyA, id, false, "session_id=client-c")
	rep, iopub := c.execute("1 + 1")
	if resultText(t, iopub) != "2" || rep.Content["status"] != "ok" {
		t.Fatalf("c: %v %v", rep, iopub)
	}
	// input() asks the client that ran the code, and only it answers.
	askID := a2.send("shell", "execute_request", map[string]any{"code": "print('got', input('? '))", "allow_stdin": true})
	got = a2.until("input_request", func(m jm) bool { return m.Header.MsgType == "input_request" })
	c.sendWith("stdin", map[string]any{"msg_id": randomHex(8), "msg_type": "input_reply", "session": c.session, "username": "t", "version": "5.3"},
		map[string]any{"value": "from c"})
	hdr, _ := json.Marshal(got[len(got)-1].Header)
	reply, _ := json.Marshal(map[string]any{"channel": "stdin", "parent_header": json.RawMessage(hdr), "metadata": map[string]any{},
		"header":  map[string]any{"msg_id": randomHex(8), "msg_type": "input_reply", "session": a2.session, "username": "t", "version": "5.3"},
		"content": map[string]any{"value": "from a"}})
	c.sync() // c's connection has handled its input_reply
	a2.raw(websocket.TextMessage, reply)
	if _, all := a2.await(askID, "input"); !strings.Contains(streamText(all), "got from a") {
		t.Fatalf("input answered by %v", all)
	}
	// A frame over the size limit ends that connection only.
	big := e.channels(t, keyA, id, false, "")
	frame, _ := json.Marshal(map[string]any{"channel": "shell", "header": big.header("execute_request"), "content": map[string]any{"code": strings.Repeat("#", 2<<20)}})
	big.ws.WriteMessage(websocket.TextMessage, frame) // the server may close while it is written
	timeout := time.After(30 * time.Second)
	for closed := false; !closed; {
		select {
		case _, ok := <-big.in:
			closed = !ok
		case <-timeout:
			t.Fatal("a frame over the limit did not end its connection")
		}
	}
	if rep, iopub := c.execute("'still here'"); resultText(t, iopub) != "'still here'" || rep.Content["status"] != "ok" {
		t.Fatalf("after the big frame: %v %v", rep, iopub)
	}
}
