package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/sessions"
)

func TestErrorResponses(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{MaxSessionsPerTenant: 1, MaxSessions: 2, QueueDepth: 1})
	var ae apiErr
	if st := e.call("", "GET", "/v1/sessions", nil, &ae); st != http.StatusUnauthorized || ae.Error.Code != "unauthorized" {
		t.Fatalf("no key: %d %+v", st, ae)
	}
	if st := e.call("wrong-key-0123456789", "GET", "/v1/sessions", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d", st)
	}
	s := e.create(keyA, nil)
	if st := e.call(keyB, "GET", "/v1/sessions/"+s.ID, nil, &ae); st != http.StatusNotFound || ae.Error.Code != "not_found" {
		t.Fatalf("other tenant: %d %+v", st, ae)
	}
	var list struct{ Sessions []session }
	e.call(keyB, "GET", "/v1/sessions", nil, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("tenant b lists a's sessions: %+v", list)
	}
	if st := e.call(keyB, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]any{"code": "1"}, nil); st != http.StatusNotFound {
		t.Fatalf("other tenant execute: %d", st)
	}
	for name, body := range map[string]string{
		"bad json":      `{"code":`,
		"unknown field": `{"code":"1","evil":true}`,
		"missing code":  `{}`,
		"bad timeout":   `{"code":"1","timeout_s":-1}`,
		"trailing":      `{"code":"1"} {}`,
	} {
		if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/execute", body, &ae); st != http.StatusBadRequest || ae.Error.Message == "" {
			t.Errorf("%s: %d %+v", name, st, ae)
		}
	}
	if st := e.call(keyA, "POST", "/v1/sessions", `{"env":{"BAD NAME":"x"}}`, nil); st != http.StatusBadRequest {
		t.Errorf("bad env: %d", st)
	}
	// The environment policy says which variable was refused and why, in
	// the client's terms.
	if st := e.call(keyA, "POST", "/v1/sessions", `{"env":{"PYTHONPATH":"/workspace/evil"}}`, &ae); st != http.StatusBadRequest ||
		ae.Error.Message != "environment variable PYTHONPATH may not be set: it steers the Python interpreter at kernel start" {
		t.Errorf("reserved env: %d %q", st, ae.Error.Message)
	}
	if st := e.call(keyA, "POST", "/v1/sessions", `{"limits":{"cpus":1e-9}}`, &ae); st != http.StatusBadRequest ||
		ae.Error.Message != "limits too small: memory_mb >= 128, cpus >= 0.05, pids >= 16 (or 0 for the default); cpus is 1e-09" {
		t.Errorf("absurd limits: %d %q", st, ae.Error.Message)
	}
	big := `{"code":"` + strings.Repeat("x", 2<<20) + `"}`
	if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/execute", big, &ae); st != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d %+v", st, ae)
	}
	if st := e.call(keyA, "POST", "/v1/sessions", nil, &ae); st != http.StatusTooManyRequests || ae.Error.Code != "too_many_sessions" {
		t.Errorf("per-key limit: %d %+v", st, ae)
	}
	if st := e.call(keyA, "GET", "/healthz", nil, nil); st != http.StatusOK {
		t.Errorf("healthz: %d", st)
	}
	// The session still works after all that.
	if x := e.exec(keyA, s.ID, "1 + 1", 0); x.Status != "ok" {
		t.Fatalf("session broken by bad requests: %+v", x)
	}
}
