package jupyter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/glassroom/glassroom/sessions"
)

// The Jupyter Server sessions API (/api/sessions), /api/me, /api/status
// and the kernel spec logos, against real gateways on real kernels, with
// jupyter_server 2's behaviour (services/sessions/handlers.py,
// sessionmanager.py) as the reference. JupyterLab's own SessionManager
// drives them in clients_test.go (TestJupyterLabSessions).

// sessionModel is a session as /api/sessions describes it.
type sessionModel struct {
	ID, Path, Name, Type string
	Kernel               kernelModel
	Notebook             *struct{ Path, Name string }
}

func TestJupyterSessionsAPI(t *testing.T) {
	for name, rt := range runtimes() {
		if name == "docker-runsc" {
			continue // nothing of it depends on the OCI runtime
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			t.Run("sessions", func(t *testing.T) { sessionsREST(t, e) })
			t.Run("hostile bodies", func(t *testing.T) { sessionsHostile(t, e) })
			t.Run("me and status", func(t *testing.T) { meAndStatus(t, e) })
			t.Run("logos", func(t *testing.T) { kernelLogos(t, e) })
		})
	}
}

// sessionCall does one /api/sessions request with key and decodes the
// answer into out.
func (e *env) sessionCall(key, method, path string, body, out any) int {
	e.t.Helper()
	return e.jupyterCall("token "+key, method, path, body, out)
}

// kernelsOf lists key's kernel ids.
func (e *env) kernelsOf(key string) map[string]bool {
	e.t.Helper()
	var list []kernelModel
	if st := e.jupyterCall("token "+key, "GET", "/api/kernels", nil, &list); st != http.StatusOK {
		e.t.Fatalf("list kernels: %d", st)
	}
	out := map[string]bool{}
	for _, k := range list {
		out[k.ID] = true
	}
	return out
}

// listSessions lists key's sessions by id.
func (e *env) listSessions(key string) map[string]sessionModel {
	e.t.Helper()
	var list []sessionModel
	if st := e.sessionCall(key, "GET", "/api/sessions", nil, &list); st != http.StatusOK {
		e.t.Fatalf("list sessions: %d", st)
	}
	out := map[string]sessionModel{}
	for _, s := range list {
		out[s.ID] = s
	}
	return out
}

// createSession makes a session with key; it must be a 201.
func (e *env) createSession(key string, body any) sessionModel {
	e.t.Helper()
	var s sessionModel
	if st := e.sessionCall(key, "POST", "/api/sessions", body, &s); st != http.StatusCreated {
		e.t.Fatalf("POST /api/sessions %v: %d %+v", body, st, s)
	}
	return s
}

func sid(kernelID string) string { return strings.ReplaceAll(kernelID, "-", "") }

// sessionsREST: create, list, get, rename, change kernel (by name and by
// id), delete, and a session that disappears with its kernel, for tenant
// A, none of it visible to tenant B.
func sessionsREST(t *testing.T, e *env) {
	if got := e.listSessions(keyA); len(got) != 0 {
		t.Fatalf("sessions at start: %+v", got)
	}
	// Create: the model, its Location, its kernel (a glassroom session).
	req, _ := http.NewRequest("POST", e.url+"/api/sessions", strings.NewReader(
		`{"path":"work/a.ipynb","type":"notebook","name":"a.ipynb","kernel":{"name":"python3"}}`))
	req.Header.Set("Authorization", "token "+keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a sessionModel
	if err := json.Unmarshal(raw, &a); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, raw)
	}
	if !uuidShape.MatchString(a.ID) || a.Path != "work/a.ipynb" || a.Name != "a.ipynb" || a.Type != "notebook" ||
		a.Notebook == nil || a.Notebook.Path != "work/a.ipynb" || a.Notebook.Name != "a.ipynb" ||
		!uuidShape.MatchString(a.Kernel.ID) || a.Kernel.Name != "python3" || a.Kernel.ExecutionState == "" ||
		!lastActivityFormat.MatchString(a.Kernel.LastActivity) || resp.Header.Get("Location") != "/api/sessions/"+a.ID {
		t.Fatalf("created session %s (Location %q)", raw, resp.Header.Get("Location"))
	}
	if a.ID == a.Kernel.ID {
		t.Fatalf("the session's id is its kernel's: %+v", a)
	}
	if st := e.call(keyA, "GET", "/v1/sessions/"+sid(a.Kernel.ID), nil, nil); st != http.StatusOK {
		t.Fatalf("the session's kernel as a /v1 session: %d", st)
	}
	if x := e.exec(keyA, sid(a.Kernel.ID), "x = 41", 0); x.Status != "ok" {
		t.Fatalf("x = 41: %+v", x)
	}

	// A path that has a session: that session, 201, no new kernel.
	before := e.kernelsOf(keyA)
	if again := e.createSession(keyA, map[string]any{"path": "work/a.ipynb", "type": "notebook", "kernel": map[string]string{"name": "bash"}}); again.ID != a.ID || again.Kernel.ID != a.Kernel.ID {
		t.Fatalf("POST with an existing path: %+v, want %+v", again, a)
	}
	if after := e.kernelsOf(keyA); len(after) != len(before) {
		t.Fatalf("kernels %v after a POST of an existing path, before %v", after, before)
	}

	// No kernel named: the default; no name: "", and no notebook member for
	// another type.
	var rawConsole map[string]json.RawMessage
	if st := e.sessionCall(keyA, "POST", "/api/sessions", map[string]any{"path": "console-1", "type": "console"}, &rawConsole); st != http.StatusCreated {
		t.Fatalf("console: %d %v", st, rawConsole)
	}
	var c sessionModel
	j, _ := json.Marshal(rawConsole)
	json.Unmarshal(j, &c)
	if _, ok := rawConsole["notebook"]; ok || string(rawConsole["name"]) != `""` || c.Kernel.Name != "python3" || c.Type != "console" {
		t.Fatalf("console session %s", j)
	}
	// The deprecated form: {"notebook": {"path"}} is a notebook.
	legacy := e.createSession(keyA, map[string]any{"notebook": map[string]string{"path": "old.ipynb"}, "kernel": map[string]string{"id": c.Kernel.ID}})
	if legacy.Path != "old.ipynb" || legacy.Type != "notebook" || legacy.Kernel.ID != c.Kernel.ID {
		t.Fatalf("deprecated form: %+v", legacy)
	}

	// List and get.
	list := e.listSessions(keyA)
	if len(list) != 3 || list[a.ID].Path != "work/a.ipynb" || list[c.ID].Kernel.ID != c.Kernel.ID || list[legacy.ID].Kernel.ID != c.Kernel.ID {
		t.Fatalf("list %+v", list)
	}
	var got sessionModel
	if st := e.sessionCall(keyA, "GET", "/api/sessions/"+a.ID, nil, &got); st != http.StatusOK || got.ID != a.ID || got.Kernel.ID != a.Kernel.ID {
		t.Fatalf("get: %d %+v", st, got)
	}

	// Rename: path, name, type; the kernel stays, its variables too.
	var renamed sessionModel
	if st := e.sessionCall(keyA, "PATCH", "/api/sessions/"+a.ID, map[string]any{"id": a.ID, "path": "work/b.ipynb", "name": "b.ipynb"}, &renamed); st != http.StatusOK ||
		renamed.Path != "work/b.ipynb" || renamed.Name != "b.ipynb" || renamed.Type != "notebook" || renamed.Kernel.ID != a.Kernel.ID || renamed.Notebook.Path != "work/b.ipynb" {
		t.Fatalf("rename: %d %+v", st, renamed)
	}
	renamed = sessionModel{}
	if st := e.sessionCall(keyA, "PATCH", "/api/sessions/"+a.ID, map[string]any{"type": "file"}, &renamed); st != http.StatusOK || renamed.Type != "file" || renamed.Notebook != nil || renamed.Path != "work/b.ipynb" {
		t.Fatalf("retype: %d %+v", st, renamed)
	}
	if st := e.sessionCall(keyA, "PATCH", "/api/sessions/"+a.ID, map[string]any{"type": "notebook", "kernel": map[string]any{}}, &renamed); st != http.StatusOK || renamed.Kernel.ID != a.Kernel.ID {
		t.Fatalf("PATCH with an empty kernel: %d %+v", st, renamed)
	}
	if x := e.exec(keyA, sid(a.Kernel.ID), "x + 1", 0); string(x.Result) != `{"text/plain":"42"}` {
		t.Fatalf("x + 1 after renames: %+v", x)
	}
	if got := e.listSessions(keyA)[a.ID]; got.Path != "work/b.ipynb" || got.Name != "b.ipynb" {
		t.Fatalf("listed after rename: %+v", got)
	}

	// Change the kernel by name: a new kernel, the old one shut down.
	changeTo := "bash"
	e.g.NeedKernel(t, changeTo)
	var moved sessionModel
	if st := e.sessionCall(keyA, "PATCH", "/api/sessions/"+a.ID, map[string]any{"kernel": map[string]string{"name": changeTo}}, &moved); st != http.StatusOK ||
		moved.ID != a.ID || moved.Kernel.Name != changeTo || moved.Kernel.ID == a.Kernel.ID || moved.Path != "work/b.ipynb" {
		t.Fatalf("change kernel to %s: %d %+v", changeTo, st, moved)
	}
	if st := e.jupyterCall("token "+keyA, "GET", "/api/kernels/"+a.Kernel.ID, nil, nil); st != http.StatusNotFound {
		t.Fatalf("the old kernel after the change: %d", st)
	}
	if x := e.exec(keyA, sid(moved.Kernel.ID), "echo $((6 * 7))", 0); x.Status != "ok" || !strings.Contains(x.Stdout, "42") {
		t.Fatalf("the new %s kernel: %+v", changeTo, x)
	}

	// Change the kernel by id: to one started through /api/kernels; the
	// one it leaves is shut down.
	k := e.startKernel(keyA, map[string]string{"name": "python3"})
	if st := e.sessionCall(keyA, "PATCH", "/api/sessions/"+a.ID, map[string]any{"kernel": map[string]string{"id": k.ID}}, &moved); st != http.StatusOK ||
		moved.Kernel.ID != k.ID || moved.Kernel.Name != "python3" {
		t.Fatalf("change kernel to %s: %d %+v", k.ID, st, moved)
	}
	if ks := e.kernelsOf(keyA); ks[list[a.ID].Kernel.ID] || !ks[k.ID] {
		t.Fatalf("kernels after a change by id: %v", ks)
	}
	// To its own kernel, in the /v1 shape: nothing is shut down.
	if st := e.sessionCall(keyA, "PATCH", "/api/sessions/"+a.ID, map[string]any{"kernel": map[string]string{"id": sid(k.ID)}}, &moved); st != http.StatusOK || moved.Kernel.ID != k.ID {
		t.Fatalf("change to its own kernel: %d %+v", st, moved)
	}
	if !e.kernelsOf(keyA)[k.ID] {
		t.Fatal("its own kernel was shut down")
	}

	// Tenant B sees none of it, touches none of it, names none of A's
	// kernels; A cannot name B's.
	kb := e.startKernel(keyB, nil)
	var je jupyterErr
	if got := e.listSessions(keyB); len(got) != 0 {
		t.Fatalf("B lists %+v", got)
	}
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		je = jupyterErr{}
		if st := e.sessionCall(keyB, m, "/api/sessions/"+a.ID, map[string]string{"path": "stolen"}, &je); st != http.StatusNotFound || je.Reason != "Not Found" {
			t.Errorf("B %s A's session: %d %+v", m, st, je)
		}
	}
	for _, c := range []struct{ who, key, kernel string }{{"B naming A's kernel", keyB, k.ID}, {"A naming B's kernel", keyA, kb.ID}} {
		je = jupyterErr{}
		if st := e.sessionCall(c.key, "POST", "/api/sessions", map[string]any{"path": "p", "type": "notebook", "kernel": map[string]string{"id": c.kernel}}, &je); st != http.StatusBadRequest || !strings.Contains(je.Message, "No such kernel") {
			t.Errorf("%s in a POST: %d %+v", c.who, st, je)
		}
	}
	je = jupyterErr{}
	if st := e.sessionCall(keyA, "PATCH", "/api/sessions/"+a.ID, map[string]any{"kernel": map[string]string{"id": kb.ID}}, &je); st != http.StatusBadRequest || !strings.Contains(je.Message, "No such kernel") {
		t.Errorf("A naming B's kernel in a PATCH: %d %+v", st, je)
	}
	if !e.kernelsOf(keyB)[kb.ID] {
		t.Fatal("B's kernel is gone after A named it")
	}
	if got := e.listSessions(keyA)[a.ID]; got.Path != "work/b.ipynb" || got.Kernel.ID != k.ID {
		t.Fatalf("A's session after B's attempts: %+v", got)
	}

	// Two sessions of one kernel (console and the deprecated notebook):
	// deleting one shuts their kernel down, and the other goes with it.
	if st := e.sessionCall(keyA, "DELETE", "/api/sessions/"+c.ID, nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if e.kernelsOf(keyA)[c.Kernel.ID] {
		t.Fatal("the deleted session's kernel runs on")
	}
	for _, id := range []string{c.ID, legacy.ID} {
		if st := e.sessionCall(keyA, "GET", "/api/sessions/"+id, nil, &je); st != http.StatusNotFound {
			t.Errorf("GET %s after its kernel's shutdown: %d", id, st)
		}
	}
	if st := e.sessionCall(keyA, "DELETE", "/api/sessions/"+c.ID, nil, &je); st != http.StatusNotFound || je.Reason != "Not Found" {
		t.Errorf("delete again: %d %+v", st, je)
	}

	// A kernel shut down through /api/kernels takes its sessions with it.
	if st := e.jupyterCall("token "+keyA, "DELETE", "/api/kernels/"+k.ID, nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete kernel: %d", st)
	}
	if got := e.listSessions(keyA); len(got) != 0 {
		t.Fatalf("sessions after their kernels ended: %+v", got)
	}

	// Clients racing to open one path get one session on one kernel.
	const racers = 6
	var wg sync.WaitGroup
	ids := make([]sessionModel, racers)
	for i := range racers {
		wg.Go(func() {
			e.jupyterCall("token "+keyA, "POST", "/api/sessions", map[string]any{"path": "raced.ipynb", "type": "notebook"}, &ids[i])
		})
	}
	wg.Wait()
	for _, s := range ids {
		if s.ID != ids[0].ID || s.Kernel.ID != ids[0].Kernel.ID || s.ID == "" {
			t.Fatalf("racing POSTs: %+v", ids)
		}
	}
	if ks := e.kernelsOf(keyA); len(ks) != 1 || !ks[ids[0].Kernel.ID] {
		t.Fatalf("kernels after racing POSTs: %v", ks)
	}

	// A kernel holds a bounded number of sessions.
	for i := 1; i < sessions.MaxJupyterSessions; i++ {
		e.createSession(keyA, map[string]any{"path": fmt.Sprintf("many-%d", i), "type": "console", "kernel": map[string]string{"id": ids[0].Kernel.ID}})
	}
	je = jupyterErr{}
	if st := e.sessionCall(keyA, "POST", "/api/sessions", map[string]any{"path": "one too many", "type": "console", "kernel": map[string]string{"id": ids[0].Kernel.ID}}, &je); st != http.StatusBadRequest || !strings.Contains(je.Message, "at most") {
		t.Fatalf("session %d of a kernel: %d %+v", sessions.MaxJupyterSessions+1, st, je)
	}
	if st := e.sessionCall(keyA, "DELETE", "/api/sessions/"+ids[0].ID, nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if got := e.listSessions(keyA); len(got) != 0 {
		t.Fatalf("sessions at the end: %+v", got)
	}
	if st := e.jupyterCall("token "+keyB, "DELETE", "/api/kernels/"+kb.ID, nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete B's kernel: %d", st)
	}
}

// sessionsHostile: malformed and oversized bodies, unknown ids and
// kernels are clear 4xx answers in the Jupyter shape, and change nothing.
func sessionsHostile(t *testing.T, e *env) {
	s := e.createSession(keyA, map[string]any{"path": "hostile.ipynb", "type": "notebook", "name": "h"})
	big := `{"path":"` + strings.Repeat("a", 2<<20) + `","type":"notebook"}`
	long := `{"path":"` + strings.Repeat("a", sessions.MaxJupyterPathBytes+1) + `","type":"notebook"}`
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/api/sessions", "", 400, "No JSON data"},
		{"POST", "/api/sessions", "null", 400, "No JSON data"},
		{"POST", "/api/sessions", "{", 400, "invalid JSON"},
		{"POST", "/api/sessions", "[]", 400, "invalid JSON"},
		{"POST", "/api/sessions", `{"type":"notebook"}`, 400, "Missing field in JSON data: path"},
		{"POST", "/api/sessions", `{"path":"x"}`, 400, "Missing field in JSON data: type"},
		{"POST", "/api/sessions", `{"path":7,"type":"notebook"}`, 400, "invalid JSON"},
		{"POST", "/api/sessions", `{"path":"x","type":"notebook","kernel":"python3"}`, 400, "invalid JSON"},
		{"POST", "/api/sessions", `{"path":"x","type":"notebook","kernel":{"name":"julia"}}`, 400, `unknown language "julia"`},
		{"POST", "/api/sessions", `{"path":"x","type":"notebook","kernel":{"id":"00000000-0000-0000-0000-000000000000"}}`, 400, "No such kernel"},
		{"POST", "/api/sessions", long, 400, "path"},
		{"POST", "/api/sessions", big, 413, "exceeds"},
		{"PATCH", "/api/sessions/" + s.ID, "", 400, "No JSON data"},
		{"PATCH", "/api/sessions/" + s.ID, `{"path":["x"]}`, 400, "invalid JSON"},
		{"PATCH", "/api/sessions/" + s.ID, `{"type":"` + strings.Repeat("t", 100) + `"}`, 400, "type"},
		{"PATCH", "/api/sessions/" + s.ID, `{"kernel":{"name":"julia"}}`, 400, `unknown language "julia"`},
		{"PATCH", "/api/sessions/" + s.ID, `{"kernel":{"id":"nope"}}`, 400, "No such kernel"},
		{"PATCH", "/api/sessions/" + s.ID, big, 413, "exceeds"},
		{"PATCH", "/api/sessions/00000000-0000-4000-8000-000000000000", `{"path":"y"}`, 404, "not found"},
		{"GET", "/api/sessions/00000000-0000-4000-8000-000000000000", "", 404, "not found"},
		{"GET", "/api/sessions/" + strings.Repeat("z", 3000), "", 404, "not found"},
		{"DELETE", "/api/sessions/nope", "", 404, "not found"},
		{"PUT", "/api/sessions/" + s.ID, `{}`, 404, "no such Jupyter API route"},
	}
	for _, c := range cases {
		var je jupyterErr
		var body any
		if c.body != "" {
			body = c.body
		}
		st := e.jupyterCall("token "+keyA, c.method, c.path, body, &je)
		if st != c.status || !strings.Contains(je.Message, c.want) || je.Reason != http.StatusText(c.status) {
			t.Errorf("%s %s %.60q: %d %+v, want %d %q", c.method, c.path[:min(len(c.path), 60)], c.body, st, je, c.status, c.want)
		}
	}
	// Without a key, or with another scheme: 401.
	for _, auth := range []string{"", "Basic " + keyA} {
		if st := e.jupyterCall(auth, "GET", "/api/sessions", nil, nil); st != http.StatusUnauthorized {
			t.Errorf("GET /api/sessions with %q: %d", auth, st)
		}
	}
	if got := e.listSessions(keyA); len(got) != 1 || got[s.ID].Path != "hostile.ipynb" || got[s.ID].Name != "h" {
		t.Fatalf("after hostile requests: %+v", got)
	}
	if st := e.sessionCall(keyA, "DELETE", "/api/sessions/"+s.ID, nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
}

// meAndStatus: /api/me is the tenant's identity (never its key) and the
// permissions asked; /api/status counts the tenant's own kernels and
// connections.
func meAndStatus(t *testing.T, e *env) {
	type me struct {
		Identity struct {
			Username    string
			Name        string
			DisplayName string  `json:"display_name"`
			Initials    *string `json:"initials"`
			AvatarURL   *string `json:"avatar_url"`
			Color       *string
		}
		Permissions map[string][]string
	}
	var ma, mb me
	q := `?permissions=` + `%7B%22sessions%22%3A%5B%22read%22%2C%22write%22%5D%2C%22contents%22%3A%5B%22read%22%5D%2C%22kernels%22%3A%5B%22execute%22%2C%22fly%22%5D%7D`
	if st := e.jupyterCall("token "+keyA, "GET", "/api/me"+q, nil, &ma); st != http.StatusOK {
		t.Fatalf("GET /api/me: %d", st)
	}
	if st := e.jupyterCall("Bearer "+keyB, "GET", "/api/me", nil, &mb); st != http.StatusOK {
		t.Fatalf("GET /api/me as B: %d", st)
	}
	id := ma.Identity
	if id.Username == "" || id.Name == "" || id.DisplayName == "" || id.Initials == nil || *id.Initials == "" || id.Username == mb.Identity.Username ||
		strings.Contains(id.Username+id.Name+id.DisplayName, keyA) || strings.Contains(mb.Identity.Username, keyB) {
		t.Fatalf("identities %+v and %+v", ma, mb)
	}
	if p := ma.Permissions; strings.Join(p["sessions"], ",") != "read,write" || len(p["contents"]) != 0 || p["contents"] == nil ||
		strings.Join(p["kernels"], ",") != "execute" || p["updatable_fields"] == nil || len(p["updatable_fields"]) != 0 {
		t.Fatalf("permissions %+v", ma.Permissions)
	}
	var je jupyterErr
	for _, bad := range []string{"%5B%5D", "%7B%22a%22%3A%22read%22%7D", "%7B%22a%22%3A%5B1%5D%7D", "nope", "%7B%22a%22%3Anull%7D"} {
		if st := e.jupyterCall("token "+keyA, "GET", "/api/me?permissions="+bad, nil, &je); st != http.StatusBadRequest || !strings.Contains(je.Message, "permissions") {
			t.Errorf("permissions=%s: %d %+v", bad, st, je)
		}
	}
	if st := e.jupyterCall("token "+keyA, "PATCH", "/api/me", `{"color":"red"}`, &je); st != http.StatusBadRequest {
		t.Errorf("PATCH /api/me: %d %+v", st, je)
	}
	if st := e.jupyterCall("", "GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("/api/me without a key: %d", st)
	}

	type status struct {
		Started      string
		LastActivity string `json:"last_activity"`
		Kernels      int
		Connections  int
	}
	k1 := e.startKernel(keyA, nil)
	k2 := e.startKernel(keyA, nil)
	ch := e.channels(t, keyA, k1.ID, true, "session_id=status-test")
	e.waitConnections(keyA, k1.ID, 1)
	var sa, sb status
	if st := e.jupyterCall("token "+keyA, "GET", "/api/status", nil, &sa); st != http.StatusOK || sa.Kernels != len(e.kernelsOf(keyA)) || sa.Kernels < 2 || sa.Connections != 1 ||
		!lastActivityFormat.MatchString(sa.Started) || !lastActivityFormat.MatchString(sa.LastActivity) || sa.LastActivity < sa.Started {
		t.Fatalf("A's status: %d %+v", st, sa)
	}
	if st := e.jupyterCall("token "+keyB, "GET", "/api/status", nil, &sb); st != http.StatusOK || sb.Kernels != 0 || sb.Connections != 0 || sb.Started != sa.Started {
		t.Fatalf("B's status: %d %+v", st, sb)
	}
	ch.close()
	for _, k := range []kernelModel{k1, k2} {
		e.jupyterCall("token "+keyA, "DELETE", "/api/kernels/"+k.ID, nil, nil)
	}
}

// kernelLogos: every installed kernel's spec names its logos, each served
// (with the key, as a header or ?token=) as a PNG of its size or an SVG,
// and no two kernels share one.
func kernelLogos(t *testing.T, e *env) {
	var specs struct {
		Kernelspecs map[string]struct{ Resources map[string]string }
	}
	if st := e.jupyterCall("token "+keyA, "GET", "/api/kernelspecs", nil, &specs); st != http.StatusOK {
		t.Fatalf("kernelspecs: %d", st)
	}
	seen := map[[32]byte]string{}
	for _, k := range e.g.Manager.InstalledKernels() {
		res := specs.Kernelspecs[k.Name].Resources
		want := map[string]string{"logo-32x32": "/kernelspecs/" + k.Name + "/logo-32x32.png", "logo-64x64": "/kernelspecs/" + k.Name + "/logo-64x64.png",
			"logo-svg": "/kernelspecs/" + k.Name + "/logo-svg.svg"}
		if fmt.Sprint(res) != fmt.Sprint(want) {
			t.Errorf("%s's resources %v, want %v", k.Name, res, want)
			continue
		}
		for key, path := range res {
			req, _ := http.NewRequest("GET", e.url+path+"?token="+keyA, nil)
			if key == "logo-64x64" {
				req, _ = http.NewRequest("GET", e.url+path, nil)
				req.Header.Set("Authorization", "token "+keyA)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ctype := resp.Header.Get("Content-Type")
			switch {
			case resp.StatusCode != http.StatusOK:
				t.Errorf("GET %s: %d %s", path, resp.StatusCode, data)
				continue
			case key == "logo-svg":
				if ctype != "image/svg+xml" || !bytes.Contains(data, []byte("<svg")) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
					t.Errorf("%s: %s %q %.80s", path, ctype, resp.Header.Get("Content-Security-Policy"), data)
				}
			default:
				img, err := png.Decode(bytes.NewReader(data))
				size := map[string]int{"logo-32x32": 32, "logo-64x64": 64}[key]
				if ctype != "image/png" || err != nil || img.Bounds().Dx() != size || img.Bounds().Dy() != size {
					t.Errorf("%s: %s, %v", path, ctype, err)
				}
			}
			sum := sha256.Sum256(data)
			if other, dup := seen[sum]; dup {
				t.Errorf("%s is the same file as %s", path, other)
			}
			seen[sum] = path
		}
	}
	for path, want := range map[string]int{
		"/kernelspecs/python3/logo-64x64.png":                             http.StatusUnauthorized, // no key
		"/kernelspecs/python3/kernel.js?token=":                           http.StatusUnauthorized,
		"/kernelspecs/python3/kernel.js?token=" + keyA:                    http.StatusNotFound,
		"/kernelspecs/python3/logo-99x99.png?token=" + keyA:               http.StatusNotFound,
		"/kernelspecs/julia/logo-64x64.png?token=" + keyA:                 http.StatusNotFound,
		"/kernelspecs/python3/a/b/logo-64x64.png?token=" + keyA:           http.StatusNotFound,
		"/kernelspecs/python3/..%2F..%2Fapi.go?token=" + keyA:             http.StatusNotFound,
		"/kernelspecs/python3/logo-..%2Fr%2Flogo-64x64.png?token=" + keyA: http.StatusNotFound,
	} {
		if st := e.jupyterCall("", "GET", path, nil, nil); st != want {
			t.Errorf("GET %s: %d, want %d", path, st, want)
		}
	}
}
