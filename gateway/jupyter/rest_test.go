package jupyter_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
)

// The Jupyter Server kernels API, tested with a Jupyter client written
// here from the protocol (jclient_test.go) against real gateways on real
// kernels: its REST half here, the channels in channels_test.go and
// lifecycle_test.go, what one client cannot do to another in
// isolation_test.go. The real clients (jupyter_server, Notebook in
// Chromium, @jupyterlab/services) are in clients_test.go.

func TestJupyterAPI(t *testing.T) {
	for name, rt := range runtimes() {
		if name == "docker-runsc" {
			continue // nothing of the kernels API depends on the OCI runtime
		}
		t.Run(name, func(t *testing.T) {
			// A short execution timeout, so that an interrupt the test sends
			// and loses is not taken for one it sent and that worked.
			// java is left out (--kernels), to be refused as not installed.
			e := newEnv(t, rt(t), sessions.Config{ExecTimeout: 20 * time.Second, InterruptGrace: time.Second, ReapInterval: 100 * time.Millisecond,
				Kernels: []string{"python3", "r", "javascript", "typescript", "bash"}})
			t.Run("rest", func(t *testing.T) { jupyterREST(t, e) })
			k := e.startKernel(keyA, nil)
			t.Run("channels legacy", func(t *testing.T) { channelsFlow(t, e, k.ID, false) })
			t.Run("channels v1", func(t *testing.T) { channelsFlow(t, e, k.ID, true) })
			t.Run("one session two faces", func(t *testing.T) { twoFaces(t, e, k.ID) })
			t.Run("queue semantics", func(t *testing.T) { queueSemantics(t, e) })
			t.Run("payloads and user expressions", func(t *testing.T) { payloadsAndExpressions(t, e) })
			t.Run("lifecycle", func(t *testing.T) { lifecycle(t, e) })
			t.Run("debug requests", func(t *testing.T) { debugRequests(t, e) })
			t.Run("debugger session", func(t *testing.T) { debuggerSession(t, e) })
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
	// Every installed kernel, and only those, with its language.
	installed := e.g.Manager.InstalledKernels()
	if len(specs.Kernelspecs) != len(installed) {
		t.Fatalf("kernelspecs %+v, installed %+v", specs.Kernelspecs, installed)
	}
	for _, k := range installed {
		if s := specs.Kernelspecs[k.Name]; s.Name != k.Name || s.Spec.Language != k.Language || len(s.Spec.Argv) == 0 {
			t.Errorf("kernelspec of %s: %+v", k.Name, s)
		}
	}
	var je jupyterErr
	for path, want := range map[string]int{
		"/api/kernelspecs/python3": http.StatusOK, "/api/kernelspecs/julia": http.StatusNotFound,
		"/kernelspecs/python3/logo-64x64.png": http.StatusOK, "/api/nothing/here": http.StatusNotFound,
		"/api/kernels/00000000-0000-0000-0000-000000000000": http.StatusNotFound,
	} {
		je = jupyterErr{}
		var out any = &je
		if strings.HasSuffix(path, ".png") {
			out = nil // an image
		}
		if st := e.jupyterCall("token "+keyA, "GET", path, nil, out); st != want || (want != http.StatusOK && (je.Message == "" || je.Reason != "Not Found")) {
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
	var s glclient.Session
	if st := e.call(keyA, "GET", "/v1/sessions/"+sid, nil, &s); st != http.StatusOK || s.ID != sid {
		t.Fatalf("the kernel as a /v1 session: %d %+v", st, s)
	}
	x := e.exec(keyA, sid, "import os\nsorted(k for k in os.environ if k.startswith(('KERNEL_', 'PYTHONPATH', 'LD_', 'JUPYTER_PATH')))", 0)
	if string(x.Result) != `{"text/plain":"['KERNEL_LAUNCH_TIMEOUT', 'KERNEL_USERNAME', 'KERNEL_WORKING_DIR']"}` {
		t.Fatalf("environment the policy allows: %s", x.Result)
	}
	v1 := e.create(keyA, 0)
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

	// A kernel name the gateway does not run is a 400 that says why.
	for body, want := range map[string]string{`{"name":"julia"}`: `unknown language "julia"`, `{"name":"java"}`: "java is not installed",
		`{"name":`: "invalid JSON"} {
		je = jupyterErr{}
		if st := e.jupyterCall("token "+keyA, "POST", "/api/kernels", body, &je); st != http.StatusBadRequest || !strings.Contains(je.Message, want) || je.Reason != "Bad Request" {
			t.Errorf("POST %s: %d %+v", body, st, je)
		}
	}
	// A kernel the gateway does not offer has no spec and no logos.
	var offered struct{ Kernelspecs map[string]any }
	if st := e.jupyterCall("token "+keyA, "GET", "/api/kernelspecs", nil, &offered); st != http.StatusOK || offered.Kernelspecs["java"] != nil || offered.Kernelspecs["python3"] == nil {
		t.Errorf("kernelspecs: %d %v", st, offered.Kernelspecs)
	}
	if st := e.jupyterCall("", "GET", "/kernelspecs/java/logo-64x64.png?token="+keyA, nil, nil); st != http.StatusNotFound {
		t.Errorf("a kernel not offered has logos: %d", st)
	}
	// An alias names its kernel; the model says the kernel's name.
	alias := e.startKernel(keyA, map[string]any{"name": "python"})
	if alias.Name != "python3" {
		t.Errorf("kernel started as python: %+v", alias)
	}
	if st := e.jupyterCall("token "+keyA, "DELETE", "/api/kernels/"+alias.ID, nil, nil); st != http.StatusNoContent {
		t.Errorf("delete %s: %d", alias.ID, st)
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
	var ae struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if st := e.call("", "GET", "/v1/sessions", nil, &ae); st != http.StatusUnauthorized || ae.Error.Code != "unauthorized" {
		t.Errorf("/v1 error shape: %d %+v", st, ae)
	}
}
