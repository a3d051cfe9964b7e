package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/gateway"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/mcp"
	"github.com/glassroom/glassroom/sessions"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// undocumented lists the routes openapi.json leaves to other documents,
// each with its reason. Everything else must be described.
var undocumented = []struct {
	pattern *regexp.Regexp
	why     string
}{
	{regexp.MustCompile(`^/\*?$`), "the notebook UI's static files (/ and its catch-all /*)"},
	{regexp.MustCompile(`^/api(/.*)?$`), "the Jupyter Server API, described by Jupyter's own documents"},
	{regexp.MustCompile(`^/kernelspecs/`), "the Jupyter Server API's kernel spec resources"},
}

type noRuntime struct{}

func (noRuntime) Name() string { return "none" }
func (noRuntime) Start(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	return nil, errors.New("no runtime in this test")
}

func loadDoc(t *testing.T, h http.Handler) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", "/openapi.json", nil)
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.status != http.StatusOK || !strings.HasPrefix(rec.header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /openapi.json without a key: %d %s", rec.status, rec.header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(rec.body.String()), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi version %q", v)
	}
	return doc
}

// TestOpenAPIDescribesEveryRoute: every registered route is in
// openapi.json (or in the commented exclusion list) and every described
// operation is registered; every $ref resolves.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	mgr, err := sessions.New(sessions.Config{}, noRuntime{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	mcpHandler := func(inProcess http.RoundTripper) (http.Handler, error) {
		h, err := mcp.NewGatewayHandler(inProcess, mcp.Config{}, zerolog.Nop())
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	srv, err := gateway.New(gateway.Config{APIKeys: []string{"openapi-test-key-0123456789"}, MCP: mcpHandler}, mgr,
		fstest.MapFS{"index.html": {Data: []byte("<html>")}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	doc := loadDoc(t, srv.Handler())
	described := map[string]bool{}
	for p, item := range doc["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			if m != "parameters" {
				described[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	toOpenAPI := strings.NewReplacer(":id", "{id}", ":ctx", "{ctx}", ":pid", "{pid}", ":token", "{token}", ":name", "{name}", ":snapshot", "{snapshot}", "/*", "/{path}")
	registered := map[string]bool{}
	var missing []string
	for _, r := range srv.Routes() {
		// echo registers a pseudo-route per group for its 404 answers.
		skip := r.Method == "echo_route_not_found"
		for _, u := range undocumented {
			skip = skip || u.pattern.MatchString(r.Path)
		}
		if skip {
			continue
		}
		key := r.Method + " " + toOpenAPI.Replace(r.Path)
		registered[key] = true
		if !described[key] {
			missing = append(missing, key)
		}
	}
	var stale []string
	for op := range described {
		if !registered[op] {
			stale = append(stale, op)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("routes not described in gateway/openapi.json (describe them, or add them to the commented exclusion list):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(stale) > 0 {
		t.Errorf("gateway/openapi.json describes operations no route serves:\n  %s", strings.Join(stale, "\n  "))
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				name, found := strings.CutPrefix(r, "#/components/schemas/")
				if _, exists := schemas[name]; !found || !exists {
					t.Errorf("dangling $ref %s", r)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	// The frame unions name every event type the sessions package emits.
	mapping := func(union string) map[string]any {
		return schemas[union].(map[string]any)["discriminator"].(map[string]any)["mapping"].(map[string]any)
	}
	server := mapping("ServerFrame")
	for _, typ := range []sessions.EventType{sessions.EventQueued, sessions.EventStarted, sessions.EventStream, sessions.EventDisplay,
		sessions.EventUpdateDisplay, sessions.EventClearOutput, sessions.EventResult, sessions.EventError, sessions.EventInputRequest,
		sessions.EventFile, sessions.EventDone, sessions.EventKernel, sessions.EventGap, sessions.EventNetwork, sessions.EventPage,
		sessions.EventSetNextInput, sessions.EventAskExit, "rejected", "complete_reply", "inspect_reply", "comm", "comm_sent", "comm_info_reply"} {
		if server[string(typ)] == nil {
			t.Errorf("ServerFrame does not describe %q frames", typ)
		}
	}
	client := mapping("ClientFrame")
	for _, typ := range []string{"execute", "interrupt", "input_reply", "resume", "complete", "inspect", "comm", "comm_info"} {
		if client[typ] == nil {
			t.Errorf("ClientFrame does not describe %q frames", typ)
		}
	}
}

// validator checks JSON values against the document's component schemas.
type validator struct {
	t      *testing.T
	schema map[string]*jsonschema.Resolved
	defs   json.RawMessage
}

func newValidator(t *testing.T, doc map[string]any) *validator {
	schemas := doc["components"].(map[string]any)["schemas"]
	raw, _ := json.Marshal(schemas)
	raw = []byte(strings.ReplaceAll(string(raw), "#/components/schemas/", "#/$defs/"))
	return &validator{t: t, schema: map[string]*jsonschema.Resolved{}, defs: raw}
}

// check validates data (raw JSON) against components/schemas/name.
func (v *validator) check(name string, data []byte) {
	v.t.Helper()
	rs := v.schema[name]
	if rs == nil {
		root := fmt.Sprintf(`{"$defs":%s,"$ref":"#/$defs/%s"}`, v.defs, name)
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(root), &s); err != nil {
			v.t.Fatalf("schema %s: %v", name, err)
		}
		var err error
		if rs, err = s.Resolve(nil); err != nil {
			v.t.Fatalf("resolve %s: %v", name, err)
		}
		v.schema[name] = rs
	}
	var inst any
	if err := json.Unmarshal(data, &inst); err != nil {
		v.t.Fatalf("%s: not JSON: %s", name, data)
	}
	if err := rs.Validate(inst); err != nil {
		v.t.Errorf("a real %s does not match openapi.json: %v\n%s", name, err, data)
	}
}

// TestOpenAPIMatchesRealAnswers validates real answers and WebSocket
// frames of a gateway (local runtime) against the document's schemas.
func TestOpenAPIMatchesRealAnswers(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v := newValidator(t, loadDoc(t, g.Server.Handler()))
	do := func(method, path, body string, want int) []byte {
		t.Helper()
		return g.Fetch(t, "Bearer "+apptest.KeyA, method, path, body, want)
	}
	v.check("Health", do("GET", "/healthz", "", 200))
	sess := do("POST", "/v1/sessions", `{"idle_timeout_s":600,"env":{"A":"b"}}`, 201)
	v.check("Session", sess)
	var s struct{ ID string }
	json.Unmarshal(sess, &s)
	base := "/v1/sessions/" + s.ID
	v.check("SessionList", do("GET", "/v1/sessions", "", 200))
	v.check("Session", do("PATCH", base, `{"idle_timeout_s":700}`, 200))
	v.check("Error", do("GET", "/v1/sessions/nope", "", 404))
	v.check("Error", do("POST", base+"/execute", `{"code":1}`, 400))
	for _, code := range []string{
		"x = 1", "x + 1", "print('out'); import sys; print('err', file=sys.stderr)", "1/0",
		"import matplotlib.pyplot as plt\nplt.plot([1]); plt.show()",
		"from IPython.display import display, clear_output\nh = display('a', display_id=True)\nh.update('b')\nclear_output()",
		"open('made.txt', 'w').write('x')", "import time; time.sleep(5)",
	} {
		body, _ := json.Marshal(map[string]any{"code": code, "timeout_s": 2})
		v.check("Execution", do("POST", base+"/execute", string(body), 200))
	}
	v.check("Completion", do("POST", base+"/complete", `{"code":"impor","cursor_pos":5}`, 200))
	v.check("Inspection", do("POST", base+"/inspect", `{"code":"len","cursor_pos":3,"detail_level":0}`, 200))
	v.check("KernelInfo", do("GET", base+"/contexts/default/kernel_info", "", 200))
	v.check("Error", do("GET", base+"/contexts/nope/kernel_info", "", 404))
	v.check("FileInfo", do("PUT", base+"/files/d/a.txt", "hello", 201))
	v.check("DirInfo", do("PUT", base+"/files/d/e?type=dir", "", 201))
	v.check("Listing", do("GET", base+"/files?path=d", "", 200))
	v.check("EditResult", do("PATCH", base+"/files/d/b.py", `{"command":"create","file_text":"x = 1\ny = 1\n"}`, 201))
	v.check("EditResult", do("PATCH", base+"/files/d/b.py", `{"command":"create","file_text":"x = 1\ny = 1\n"}`, 200))
	v.check("EditResult", do("PATCH", base+"/files/d/b.py", `{"command":"view","view_range":[2,-1]}`, 200))
	v.check("EditResult", do("PATCH", base+"/files/d/b.py", `{"command":"str_replace","old_str":"x = 1","new_str":"x = 2"}`, 200))
	v.check("EditResult", do("PATCH", base+"/files/d/b.py", `{"command":"insert","insert_line":0,"new_str":"import os"}`, 200))
	v.check("Error", do("PATCH", base+"/files/d/b.py", `{"command":"str_replace","old_str":" = "}`, 409))

	u := "ws" + strings.TrimPrefix(g.URL, "http") + base + "/ws"
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + apptest.KeyA}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	seen := map[string]bool{}
	var widget string // the comm id of a widget the kernel opened
	read := func(until string) {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		for !seen[until] {
			_, data, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("ws read (seen %v): %v", seen, err)
			}
			v.check("ServerFrame", data)
			var f struct {
				Type, ID string
				Msg      struct {
					Header struct {
						MsgType string `json:"msg_type"`
					}
					Content struct {
						CommID string `json:"comm_id"`
					}
				}
			}
			json.Unmarshal(data, &f)
			if f.Type == "comm" && f.Msg.Header.MsgType == "comm_open" {
				widget = f.Msg.Content.CommID
			}
			seen[f.Type] = true
			seen[f.Type+":"+f.ID] = true
		}
	}
	conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"execute","id":"w1","code":"print(input('?'))\nopen('w.txt','w').write('1')\n1/0"}`))
	read("input_request:w1")
	for _, f := range []string{
		`{"type":"input_reply","id":"w1","value":"v"}`,
		`{"type":"complete","id":"c1","code":"pri","cursor_pos":3}`,
		`{"type":"inspect","id":"i1","code":"len","cursor_pos":3}`,
		`{"type":"bogus"}`,
		`{"type":"execute","id":"w2","code":"42"}`,
		`{"type":"resume","since":0}`,
	} {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, until := range []string{"done:w2", "complete_reply:c1", "inspect_reply:i1", "rejected:"} {
		read(until)
	}
	// Comms: a widget's frames, a client's comm message and comm_info.
	conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"execute","id":"w3","code":"import ipywidgets as w\nimg = w.Image(value=b'png')"}`))
	read("done:w3")
	frame, _ := json.Marshal(map[string]any{"type": "comm", "id": "k1", "msg_type": "comm_msg", "metadata": map[string]any{},
		"content": map[string]any{"comm_id": widget, "data": map[string]any{"method": "request_state"}}, "buffers": []string{}})
	conn.WriteMessage(websocket.TextMessage, frame)
	conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"comm_info","id":"ci","target_name":"jupyter.widget"}`))
	for _, until := range []string{"comm_sent:k1", "comm_info_reply:ci"} {
		read(until)
	}
	for _, typ := range []string{"kernel", "started", "input_request", "stream", "file", "error", "result", "done", "comm", "comm_sent", "comm_info_reply"} {
		if !seen[typ] {
			t.Errorf("no %s frame was checked (seen %v)", typ, seen)
		}
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(200)
	return r.body.Write(p)
}

// TestOpenAPIDescribesExecuteFields: the execute request's schema, and the
// WebSocket's execute frame, describe every field of api.ExecuteRequest
// (and the request schema no other).
func TestOpenAPIDescribesExecuteFields(t *testing.T) {
	mgr, err := sessions.New(sessions.Config{}, noRuntime{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.New(gateway.Config{APIKeys: []string{"openapi-test-key-0123456789"}}, mgr,
		fstest.MapFS{"index.html": {Data: []byte("<html>")}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	schemas := loadDoc(t, srv.Handler())["components"].(map[string]any)["schemas"].(map[string]any)
	props := func(name string) map[string]any {
		return schemas[name].(map[string]any)["properties"].(map[string]any)
	}
	var fields []string
	rt := reflect.TypeOf(api.ExecuteRequest{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	req, frame := props("ExecuteRequest"), props("ExecuteFrame")
	for _, f := range fields {
		if req[f] == nil {
			t.Errorf("ExecuteRequest does not describe %q", f)
		}
		if f != "id" && frame[f] == nil {
			t.Errorf("ExecuteFrame does not describe %q", f)
		}
	}
	if len(req) != len(fields) {
		t.Errorf("ExecuteRequest describes %d fields, api.ExecuteRequest has %d (%v)", len(req), len(fields), fields)
	}
}
