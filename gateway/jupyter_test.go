package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
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

// jupyterCall does one /api request with "Authorization: <auth>" (none if
// empty) and decodes the JSON answer into out.
func (e *env) jupyterCall(auth, method, path string, body any, out any) int {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, r)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
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

// channels opens kernel id's channels with key.
func (e *env) channels(key, id string, v1 bool, query string) *jclient {
	e.t.Helper()
	url := "ws" + strings.TrimPrefix(e.url, "http") + "/api/kernels/" + id + "/channels?" + query
	return dialJupyter(e.t, url, http.Header{"Authorization": {"token " + key}}, v1)
}

// lastActivityFormat is jupyter_server's %Y-%m-%dT%H:%M:%S.%fZ.
var lastActivityFormat = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

func TestJupyterAPI(t *testing.T) {
	for name, rt := range runtimes() {
		if name == "docker-runsc" {
			continue // the kernels API adds nothing runtime-specific beyond docker
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{InterruptGrace: time.Second})
			k := e.startKernel(keyA, map[string]any{"name": "python3", "env": map[string]string{
				"KERNEL_USERNAME": "ada", "KERNEL_LAUNCH_TIMEOUT": "40", "KERNEL_WORKING_DIR": "/home/ada", "PYTHONPATH": "/evil", "LD_PRELOAD": "x"}})
			if !uuidShape.MatchString(k.ID) || k.Name != "python3" || k.ExecutionState != "idle" || !lastActivityFormat.MatchString(k.LastActivity) {
				t.Fatalf("kernel model %+v", k)
			}
			if _, err := time.Parse("2006-01-02T15:04:05.000000Z", k.LastActivity); err != nil {
				t.Fatal(err)
			}
			t.Run("channels legacy", func(t *testing.T) { channelsFlow(t, e, k.ID, false) })
			t.Run("channels v1", func(t *testing.T) { channelsFlow(t, e, k.ID, true) })
		})
	}
}

// channelsFlow runs the core of a notebook's use of a kernel over one
// channels connection.
func channelsFlow(t *testing.T, e *env, id string, v1 bool) {
	c := e.channels(keyA, id, v1, "session_id="+randomHex(8))
	status := c.until("initial status", func(m jm) bool { return m.Header.MsgType == "status" })
	if s := status[len(status)-1]; s.Content["execution_state"] != "idle" || s.Channel != "iopub" {
		t.Fatalf("initial status %v", s)
	}
	info, msgs := c.request("shell", "kernel_info_request", map[string]any{})
	if info.Header.MsgType != "kernel_info_reply" || info.Content["status"] != "ok" || info.Content["protocol_version"] == nil ||
		info.Content["debugger"] != false || info.Channel != "shell" {
		t.Fatalf("kernel info %v", info)
	}
	if find(t, msgs, "status").Content["execution_state"] != "busy" {
		t.Fatalf("no busy before the kernel_info reply: %v", msgs)
	}
	rep, iopub := c.execute("x = 41")
	if rep.Content["status"] != "ok" || rep.Channel != "shell" {
		t.Fatalf("x = 41: %v %v", rep, iopub)
	}
	in := find(t, iopub, "execute_input")
	count := in.Content["execution_count"]
	rep, iopub = c.execute("x + 1")
	if resultText(t, iopub) != "42" || rep.Content["execution_count"] != find(t, iopub, "execute_result").Content["execution_count"] ||
		find(t, iopub, "execute_input").Content["execution_count"].(float64) != count.(float64)+1 {
		t.Fatalf("x + 1: %v %v", rep, iopub)
	}
	for _, m := range iopub {
		if m.Header.Session == "" || m.Header.Version != "5.3" || !lastActivityFormat.MatchString(m.Header.Date) {
			t.Fatalf("header %+v", m.Header)
		}
	}
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
	_ = websocket.BinaryMessage
	_ = context.Background
}
