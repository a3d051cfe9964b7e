package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/gorilla/websocket"
)

// The Jupyter Server kernels API, tested with a Jupyter client written
// here from the protocol (jupyter_client_test.go) against real gateways on
// real kernels. The real clients (jupyter_server, Notebook in Chromium,
// @jupyterlab/services) are in jupyter_clients_test.go.

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// lastActivityFormat is jupyter_server's %Y-%m-%dT%H:%M:%S.%fZ.
var lastActivityFormat = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// jupyterCall does one request with "Authorization: <auth>" (none if
// empty) and decodes the JSON answer into out.
func (e *env) jupyterCall(auth, method, path string, body any, out any) int {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, requestBody(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	return e.decode(method, path, resp, err, out)
}

type kernelModel struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	LastActivity   string `json:"last_activity"`
	ExecutionState string `json:"execution_state"`
	Connections    int    `json:"connections"`
}

type jupyterErr struct {
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// startKernel creates a kernel through /api with key.
func (e *env) startKernel(key string, body any) kernelModel {
	e.t.Helper()
	var k kernelModel
	if st := e.jupyterCall("token "+key, "POST", "/api/kernels", body, &k); st != http.StatusCreated {
		e.t.Fatalf("start kernel: %d %+v", st, k)
	}
	return k
}

func (e *env) channelsURL(id, query string) string {
	return "ws" + strings.TrimPrefix(e.url, "http") + "/api/kernels/" + id + "/channels?" + query
}

// channels opens kernel id's channels with key and reads the status a new
// connection gets first.
func (e *env) channels(t *testing.T, key, id string, v1 bool, query string) *jclient {
	t.Helper()
	c := dialJupyter(t, e.channelsURL(id, query), http.Header{"Authorization": {"token " + key}}, v1)
	if q, _ := url.ParseQuery(query); q.Get("session_id") != "" {
		c.session = q.Get("session_id") // as JupyterLab does
	}
	if m, ok := c.next(30 * time.Second); !ok || m.Header.MsgType != "status" || m.Channel != "iopub" {
		t.Fatalf("first message %v", m)
	}
	return c
}

func TestJupyterAPI(t *testing.T) {
	for name, rt := range runtimes() {
		if name == "docker-runsc" {
			continue // nothing of the kernels API depends on the OCI runtime
		}
		t.Run(name, func(t *testing.T) {
			// A short execution timeout, so that an interrupt the test sends
			// and loses is not taken for one it sent and that worked.
			e := newEnv(t, rt(t), sessions.Config{ExecTimeout: 20 * time.Second, InterruptGrace: time.Second, ReapInterval: 100 * time.Millisecond})
			t.Run("rest", func(t *testing.T) { jupyterREST(t, e) })
			k := e.startKernel(keyA, nil)
			t.Run("channels legacy", func(t *testing.T) { channelsFlow(t, e, k.ID, false) })
			t.Run("channels v1", func(t *testing.T) { channelsFlow(t, e, k.ID, true) })
			t.Run("one session two faces", func(t *testing.T) { twoFaces(t, e, k.ID) })
			t.Run("queue semantics", func(t *testing.T) { queueSemantics(t, e) })
			t.Run("lifecycle", func(t *testing.T) { lifecycle(t, e) })
		})
	}
}

// jupyterREST: the REST half of the API, its auth, ids and errors.
func jupyterREST(t *testing.T, e *env) {
	var version map[string]string
	if st := e.jupyterCall("", "GET", "/api", nil, &version); st != http.StatusOK || version["version"] == "" {
		t.Fatalf("GET /api: %d %v", st, version)
	}
	var specs struct {
		Default     string
		Kernelspecs map[string]struct {
			Name string
			Spec struct {
				Argv        []string
				DisplayName string `json:"display_name"`
				Language    string
			}
			Resources map[string]string
		}
	}
	if st := e.jupyterCall("token "+keyA, "GET", "/api/kernelspecs", nil, &specs); st != http.StatusOK || specs.Default != "python3" ||
		specs.Kernelspecs["python3"].Spec.Language != "python" || len(specs.Kernelspecs["python3"].Spec.Argv) == 0 ||
		specs.Kernelspecs["python3"].Name != "python3" || specs.Kernelspecs["python3"].Resources == nil {
		t.Fatalf("kernelspecs: %d %+v", st, specs)
	}
	var je jupyterErr
	for path, want := range map[string]int{
		"/api/kernelspecs/python3": http.StatusOK, "/api/kernelspecs/julia": http.StatusNotFound,
		"/kernelspecs/python3/logo-64x64.png": http.StatusNotFound, "/api/nothing/here": http.StatusNotFound,
		"/api/kernels/00000000-0000-0000-0000-000000000000": http.StatusNotFound,
	} {
		je = jupyterErr{}
		if st := e.jupyterCall("token "+keyA, "GET", path, nil, &je); st != want || (want != http.StatusOK && (je.Message == "" || je.Reason != "Not Found")) {
			t.Errorf("GET %s: %d %+v, want %d", path, st, je, want)
		}
	}

	// Auth: token and Bearer schemes; Jupyter-shaped 401s.
	for _, auth := range []string{"", "token wrong-key-0123456789", "Basic " + keyA, keyA} {
		je = jupyterErr{}
		if st := e.jupyterCall(auth, "GET", "/api/kernels", nil, &je); st != http.StatusUnauthorized || je.Message == "" || je.Reason != "Unauthorized" {
			t.Errorf("auth %q: %d %+v", auth, st, je)
		}
	}
	if st := e.jupyterCall("", "GET", "/api/kernels?token="+keyA, nil, nil); st != http.StatusUnauthorized {
		t.Errorf("?token= outside WebSockets: %d", st)
	}
	var list []kernelModel
	if st := e.jupyterCall("Bearer "+keyA, "GET", "/api/kernels", nil, &list); st != http.StatusOK {
		t.Fatalf("Bearer: %d", st)
	}

	// A kernel is a session, a session is a kernel; ids in both shapes.
	k := e.startKernel(keyA, map[string]any{"name": "python3", "path": "notebooks/a.ipynb", "env": map[string]any{
		"KERNEL_USERNAME": "ada", "KERNEL_LAUNCH_TIMEOUT": "40", "KERNEL_WORKING_DIR": "/home/ada",
		"PYTHONPATH": "/evil", "LD_PRELOAD": "/evil.so", "JUPYTER_PATH": "/evil", "NOT A NAME": "x", "KERNEL_NUMBER": 7}})
	if !uuidShape.MatchString(k.ID) || k.Name != "python3" || k.ExecutionState != "idle" || !lastActivityFormat.MatchString(k.LastActivity) {
		t.Fatalf("kernel model %+v", k)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z", k.LastActivity); err != nil {
		t.Fatal(err)
	}
	sid := strings.ReplaceAll(k.ID, "-", "")
	var s session
	if st := e.call(keyA, "GET", "/v1/sessions/"+sid, nil, &s); st != http.StatusOK || s.ID != sid {
		t.Fatalf("the kernel as a /v1 session: %d %+v", st, s)
	}
	x := e.exec(keyA, sid, "import os\nsorted(k for k in os.environ if k.startswith(('KERNEL_', 'PYTHONPATH', 'LD_', 'JUPYTER_PATH')))", 0)
	if string(x.Result) != `{"text/plain":"['KERNEL_LAUNCH_TIMEOUT', 'KERNEL_USERNAME', 'KERNEL_WORKING_DIR']"}` {
		t.Fatalf("environment the policy allows: %s", x.Result)
	}
	v1 := e.create(keyA, nil)
	e.jupyterCall("token "+keyA, "GET", "/api/kernels", nil, &list)
	ids := map[string]bool{}
	for _, m := range list {
		ids[m.ID] = true
	}
	if len(list) != 2 || !ids[k.ID] || !ids[kernelIDOf(v1.ID)] {
		t.Fatalf("kernels %+v, want %s and the /v1 session %s", list, k.ID, v1.ID)
	}
	for _, id := range []string{k.ID, sid, strings.ToUpper(k.ID)} {
		var m kernelModel
		if st := e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+id, nil, &m); st != http.StatusOK || m.ID != k.ID {
			t.Errorf("GET kernel as %s: %d %+v", id, st, m)
		}
	}
	// Another key's kernel does not exist.
	if st := e.jupyterCall("token "+keyB, "GET", "/api/kernels/"+k.ID, nil, &je); st != http.StatusNotFound || je.Reason != "Not Found" {
		t.Errorf("other tenant: %d %+v", st, je)
	}
	e.jupyterCall("token "+keyB, "GET", "/api/kernels", nil, &list)
	if len(list) != 0 {
		t.Errorf("tenant B lists %+v", list)
	}
	if _, err := tryDialJupyter(e.channelsURL(k.ID, ""), http.Header{"Authorization": {"token " + keyB}}, false); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("tenant B opened A's channels: %v", err)
	}
	if _, err := tryDialJupyter(e.channelsURL(k.ID, ""), nil, false); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("channels without a token: %v", err)
	}
	c, err := tryDialJupyter(e.channelsURL(k.ID, "token="+keyA), nil, false)
	if err != nil {
		t.Fatalf("?token= on the WebSocket: %v", err)
	}
	c.close()

	for body, want := range map[string]int{`{"name":"julia"}`: http.StatusNotFound, `{"name":`: http.StatusBadRequest} {
		if st := e.jupyterCall("token "+keyA, "POST", "/api/kernels", body, &je); st != want || je.Message == "" {
			t.Errorf("POST %s: %d %+v", body, st, je)
		}
	}
	if st := e.jupyterCall("token "+keyA, "POST", "/api/kernels/"+k.ID+"/interrupt", nil, nil); st != http.StatusNoContent {
		t.Errorf("interrupt: %d", st)
	}
	var m kernelModel
	e.exec(keyA, sid, "y = 1", 0)
	if st := e.jupyterCall("token "+keyA, "POST", "/api/kernels/"+k.ID+"/restart", "{}", &m); st != http.StatusOK || m.ID != k.ID || m.ExecutionState != "idle" {
		t.Errorf("restart: %d %+v", st, m)
	}
	if x := e.exec(keyA, sid, "y", 0); x.Error == nil || x.Error.Name != "NameError" {
		t.Errorf("y after restart: %+v", x)
	}
	for _, id := range []string{k.ID, v1.ID} {
		if st := e.jupyterCall("token "+keyA, "DELETE", "/api/kernels/"+id, nil, nil); st != http.StatusNoContent {
			t.Errorf("delete %s: %d", id, st)
		}
		if st := e.jupyterCall("token "+keyA, "DELETE", "/api/kernels/"+id, nil, &je); st != http.StatusNotFound || je.Reason != "Not Found" {
			t.Errorf("delete %s again: %d %+v", id, st, je)
		}
	}
	if st := e.call(keyA, "GET", "/v1/sessions/"+sid, nil, nil); st != http.StatusNotFound {
		t.Errorf("session after DELETE /api/kernels: %d", st)
	}
	// /v1 keeps its own error shape.
	var ae apiErr
	if st := e.call("", "GET", "/v1/sessions", nil, &ae); st != http.StatusUnauthorized || ae.Error.Code != "unauthorized" {
		t.Errorf("/v1 error shape: %d %+v", st, ae)
	}
}

func kernelIDOf(sessionID string) string {
	s := sessionID
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// channelsFlow: a notebook's use of a kernel over one connection.
func channelsFlow(t *testing.T, e *env, id string, v1 bool) {
	c := e.channels(t, keyA, id, v1, "session_id="+randomHex(8))
	info, msgs := c.request("shell", "kernel_info_request", map[string]any{})
	if info.Header.MsgType != "kernel_info_reply" || info.Content["status"] != "ok" || info.Content["protocol_version"] == nil ||
		info.Content["implementation"] != "ipython" || info.Content["debugger"] != false || info.Channel != "shell" {
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
	// Comms are not relayed: no comms, an opened comm is closed at once.
	if rep, _ := c.request("shell", "comm_info_request", map[string]any{}); rep.Content["status"] != "ok" || len(rep.Content["comms"].(map[string]any)) != 0 {
		t.Fatalf("comm_info: %v", rep)
	}
	openID := c.send("shell", "comm_open", map[string]any{"comm_id": "c1", "target_name": "jupyter.widget", "data": map[string]any{}})
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

func streamText(msgs []jm) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Header.MsgType == "stream" {
			b.WriteString(m.Content["text"].(string))
		}
	}
	return b.String()
}

// twoFaces: several connections, /v1 executions on the Jupyter face and
// Jupyter executions on /v1, replies routed to their client, reconnects.
func twoFaces(t *testing.T, e *env, id string) {
	a := e.channels(t, keyA, id, false, "session_id=client-a")
	b := e.channels(t, keyA, id, true, "session_id=client-b")
	w := e.ws(keyA, strings.ReplaceAll(id, "-", ""), "")
	var m kernelModel
	if e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+id, nil, &m); m.Connections != 3 {
		t.Errorf("connections %d, want 3", m.Connections)
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
	// its reply included.
	a.send("shell", "execute_request", map[string]any{"code": "print('before')\nimport time\ntime.sleep(0.5)\nprint('while a was away')"})
	missed := a.until("the first output", func(m jm) bool { return m.Header.MsgType == "stream" })[0].Parent.MsgID
	a.close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+id, nil, &m); m.Connections == 2 {
			break // a's connection has ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's connection did not end: %+v", m)
		}
	}
	a2 := e.channels(t, keyA, id, false, "session_id=client-a")
	rep, got = a2.await(missed, "the missed execution")
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
	c.request("shell", "comm_info_request", map[string]any{}) // c's connection has handled its input_reply (it reads in order)
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
	s := e.create(keyA, map[string]any{"idle_timeout_s": 2})
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
// executions, and the cell says what happened.
func TestJupyterTimeout(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{ExecTimeout: 2 * time.Second, InterruptGrace: time.Second})
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
			t.Fatal("the kernel was never paused")
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
