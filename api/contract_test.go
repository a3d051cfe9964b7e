package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/gorilla/websocket"
)

// strict decodes body into v with unknown fields refused: a field the
// gateway writes that the wire types lack (or a changed name) fails.
func strict(t *testing.T, what string, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s does not decode into %T: %v\n%s", what, v, err, body)
	}
}

// TestGatewayAnswersAreTheWireTypes drives a real gateway over a real
// kernel and decodes every kind of answer and WebSocket frame into the
// types of package api, refusing unknown fields: the server and the SDK
// speak one set of types.
func TestGatewayAnswersAreTheWireTypes(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	call := func(method, path, body string, want int) []byte {
		t.Helper()
		return g.Fetch(t, "Bearer "+apptest.KeyA, method, path, body, want)
	}
	var h api.Health
	strict(t, "healthz", call("GET", "/healthz", "", 200), &h)
	var s api.Session
	strict(t, "a new session", call("POST", "/v1/sessions", `{"limits":{"memory_mb":512}}`, 201), &s)
	if s.ID == "" || s.Limits.MemoryMB != 512 {
		t.Fatalf("session %+v", s)
	}
	sp := "/v1/sessions/" + s.ID
	var list api.SessionList
	strict(t, "the session list", call("GET", "/v1/sessions", "", 200), &list)
	var tmpls struct {
		Templates []api.Template `json:"templates"`
	}
	strict(t, "the templates", call("GET", "/v1/templates", "", 200), &tmpls)
	var m api.Metrics
	strict(t, "the metrics", call("GET", sp+"/metrics", "", 200), &m)
	var fi api.FileInfo
	strict(t, "an upload", call("PUT", sp+"/files/d/a.txt", "hello", 201), &fi)
	strict(t, "a new directory", call("PUT", sp+"/files/e?type=dir", "", 201), &fi)
	var ls api.Listing
	strict(t, "a listing", call("GET", sp+"/files?path=d", "", 200), &ls)
	if len(ls.Entries) != 1 || ls.Entries[0].Size != 5 {
		t.Fatalf("listing %+v", ls)
	}
	var ed api.EditResult
	strict(t, "a create", call("PATCH", sp+"/files/d/b.py", `{"command":"create","file_text":"x = 1\n"}`, 201), &ed)
	strict(t, "a str_replace", call("PATCH", sp+"/files/d/b.py", `{"command":"str_replace","old_str":"1","new_str":"2"}`, 200), &ed)
	strict(t, "an insert", call("PATCH", sp+"/files/d/b.py", `{"command":"insert","insert_line":1,"new_str":"y = 3"}`, 200), &ed)
	strict(t, "a view", call("PATCH", sp+"/files/d/b.py", `{"command":"view","view_range":[1,-1]}`, 200), &ed)
	if ed.Command != api.EditView || ed.Text != "     1\tx = 2\n     2\ty = 3\n" || ed.Lines != 2 || ed.StartLine != 1 || ed.EndLine != 2 {
		t.Fatalf("view %+v", ed)
	}
	var x api.Execution
	code := `print("out"); import sys; print("err", file=sys.stderr)
from IPython.display import display, HTML
display(HTML("<b>x</b>"))
open("made.txt", "w").write("m")
41 + 1`
	body, _ := json.Marshal(map[string]string{"code": code})
	strict(t, "an execution", call("POST", sp+"/execute", string(body), 200), &x)
	if x.Status != api.StatusOK || x.Result.Text("text/plain") != "42" || len(x.Files) != 1 {
		t.Fatalf("execution %+v", x)
	}
	strict(t, "a failed execution", call("POST", sp+"/execute", `{"code":"1/0"}`, 200), &x)
	if x.Error == nil || x.Error.Name != "ZeroDivisionError" {
		t.Fatalf("execution %+v", x)
	}
	var comp api.Completion
	strict(t, "a completion", call("POST", sp+"/complete", `{"code":"pri","cursor_pos":3}`, 200), &comp)
	var insp api.Inspection
	strict(t, "an inspection", call("POST", sp+"/inspect", `{"code":"print","cursor_pos":5}`, 200), &insp)
	if !insp.Found {
		t.Fatalf("inspection %+v", insp)
	}
	var snap api.Snapshot
	strict(t, "a snapshot", call("POST", sp+"/snapshots", "", 201), &snap)
	var snaps api.SnapshotList
	strict(t, "the snapshots", call("GET", "/v1/snapshots?session_id="+s.ID, "", 200), &snaps)
	var restored api.Session
	strict(t, "a session from a snapshot", call("POST", "/v1/sessions", `{"snapshot":"`+snap.ID+`"}`, 201), &restored)
	if len(snaps.Snapshots) != 1 || restored.Restore == nil || len(restored.Restore.Contexts) != 1 || len(snap.Contexts[0].Captured) == 0 {
		t.Fatalf("snapshots %+v, restore %+v", snaps, restored.Restore)
	}
	var forks api.ForkResult
	strict(t, "a fork", call("POST", sp+"/fork", `{"count":1}`, 201), &forks)
	if len(forks.Forks) != 1 || forks.Forks[0].Session == nil {
		t.Fatalf("forks %+v", forks)
	}

	// The WebSocket: every frame of a run with output of each kind, an
	// input request, a refusal, and a completion.
	ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(g.URL, "http", "ws", 1)+sp+"/ws?token="+apptest.KeyA, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	send := func(v any) {
		t.Helper()
		if err := ws.WriteJSON(v); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"type": "execute", "id": "c1", "code": "name = input('who? ')\n" + code})
	send(map[string]any{"type": "bogus"})
	seen := map[api.EventType]bool{}
	_ = ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for !seen[api.EventDone] || !seen[api.EventRejected] {
		_, frame, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("reading frames (seen %v): %v", seen, err)
		}
		var ev api.Event
		strict(t, "a WebSocket frame", frame, &ev)
		seen[ev.Type] = true
		if ev.Type == api.EventInputRequest {
			send(map[string]any{"type": "input_reply", "id": "c1", "value": "ada"})
		}
	}
	for _, want := range []api.EventType{api.EventKernel, api.EventStarted, api.EventStream, api.EventDisplay,
		api.EventResult, api.EventFile, api.EventInputRequest, api.EventDone, api.EventRejected} {
		if !seen[want] {
			t.Errorf("no %s frame (seen %v)", want, seen)
		}
	}

	// Comms: a widget's comm frames (with a buffer), the answers to a
	// client's comm and comm_info frames.
	send(map[string]any{"type": "execute", "id": "c2", "code": "import ipywidgets as w\nimg = w.Image(value=b'png')"})
	var image string
	for image == "" || !seen[api.EventCommSent] || !seen[api.EventCommInfoReply] {
		_, frame, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("reading comm frames (seen %v): %v", seen, err)
		}
		var ev api.Event
		strict(t, "a WebSocket frame", frame, &ev)
		seen[ev.Type] = true
		if ev.Type == api.EventComm && ev.Msg.Header.MsgType == "comm_open" && len(ev.Msg.Buffers) == 1 && string(ev.Msg.Buffers[0]) == "png" {
			var c struct {
				CommID string `json:"comm_id"`
			}
			if err := json.Unmarshal(ev.Msg.Content, &c); err != nil || c.CommID == "" {
				t.Fatalf("comm_open content %s: %v", ev.Msg.Content, err)
			}
			image = c.CommID
			send(map[string]any{"type": "comm", "id": "m1", "msg_type": "comm_msg", "content": map[string]any{"comm_id": image, "data": map[string]any{"method": "request_state"}}})
			send(map[string]any{"type": "comm_info", "id": "i1"})
		}
		if ev.Type == api.EventCommInfoReply && ev.Comms[image].TargetName != "jupyter.widget" {
			t.Fatalf("comm_info_reply %+v lacks the image %s", ev.Comms, image)
		}
	}
}
