package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// TestHibernation: a session whose lifecycle hibernates it (on_timeout
// pause, keep_memory false) is, at its idle timeout, snapshotted and its
// sandbox freed: its stream says so, it is listed "hibernated" under its
// id, no live session holds a sandbox, and its next execution wakes it
// with its variables and files, the woken stream saying so. A client's
// pause with keep_memory false hibernates a session without a lifecycle:
// its uses are 409 session_hibernated until a resume wakes it; deleting
// a hibernated session ends it.
func TestHibernation(t *testing.T) {
	for name, rt := range map[string]runtimeFactory{"local": localRuntime, "docker": dockerRuntime} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			c := e.client(keyA)
			ctx := context.Background()
			no := false
			s, err := c.CreateSession(ctx, glclient.CreateOptions{IdleTimeout: 2 * time.Second,
				Lifecycle: &glclient.Lifecycle{OnTimeout: "pause", AutoResume: true, KeepMemory: &no}})
			if err != nil {
				t.Fatal(err)
			}
			if x := e.exec(keyA, s.ID, "x = 41\nopen('kept.txt', 'w').write('kept')", 60); x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			ws := e.ws(keyA, s.ID, "")
			ws.until(func(f frame) bool {
				return f.Type == sessions.EventKernel && f.State == string(sessions.StateHibernated)
			})
			var info glclient.Session
			testkit.Eventually(t, time.Minute, func() bool {
				e.call(keyA, "GET", "/v1/sessions/"+s.ID, nil, &info)
				return info.State == "hibernated"
			}, "the session hibernated")
			if !info.Hibernated || !info.PausedByClient || info.Lifecycle == nil || info.Lifecycle.KeepMemory == nil {
				t.Fatalf("a hibernated session's info: %+v", info)
			}
			if list, err := c.ListSessions(ctx); err != nil || len(list) != 1 || list[0].ID != s.ID || list[0].State != "hibernated" {
				t.Fatalf("the list: %+v %v", list, err)
			}
			held := 0
			for _, n := range e.mgr.Stats().ByState {
				held += n
			}
			if held != 0 {
				t.Fatalf("a sandbox is held while the session hibernates: %+v", e.mgr.Stats().ByState)
			}
			x := e.exec(keyA, s.ID, "print(x + 1, open('kept.txt').read())", 60)
			if x.Status != "ok" || x.Stdout != "42 kept\n" {
				t.Fatalf("after the wake: %+v", x)
			}
			woken := e.ws(keyA, s.ID, "?since=0")
			woken.until(func(f frame) bool {
				return f.Type == sessions.EventKernel && strings.Contains(f.Reason, "woken from hibernation")
			})

			// A client's hibernation, without auto_resume.
			s2, err := c.CreateSession(ctx, glclient.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e.exec(keyA, s2.ID, "y = 7", 60)
			if st := e.call(keyA, "POST", "/v1/sessions/"+s2.ID+"/pause", map[string]any{"keep_memory": false}, &info); st != http.StatusOK || info.State != "hibernated" {
				t.Fatalf("pause keep_memory false: %d %+v", st, info)
			}
			var refused apiErr
			if st := e.call(keyA, "POST", "/v1/sessions/"+s2.ID+"/execute", map[string]string{"code": "y"}, &refused); st != http.StatusConflict || refused.Error.Code != "session_hibernated" {
				t.Fatalf("an execution of a hibernated session: %d %+v", st, refused)
			}
			if st := e.call(keyB, "POST", "/v1/sessions/"+s2.ID+"/resume", nil, nil); st != http.StatusNotFound {
				t.Fatalf("another key's resume: %d", st)
			}
			if st := e.call(keyA, "POST", "/v1/sessions/"+s2.ID+"/resume", nil, &info); st != http.StatusOK || info.State == "hibernated" {
				t.Fatalf("resume: %d %+v", st, info)
			}
			if x := e.exec(keyA, s2.ID, "print(y)", 60); x.Stdout != "7\n" {
				t.Fatalf("after the resume: %+v", x)
			}
			if st := e.call(keyA, "POST", "/v1/sessions/"+s2.ID+"/pause", map[string]any{"keep_memory": false}, nil); st != http.StatusOK {
				t.Fatalf("pause again: %d", st)
			}
			if st := e.call(keyA, "DELETE", "/v1/sessions/"+s2.ID, nil, nil); st != http.StatusNoContent {
				t.Fatalf("delete a hibernated session: %d", st)
			}
			if st := e.call(keyA, "GET", "/v1/sessions/"+s2.ID, nil, nil); st != http.StatusNotFound {
				t.Fatalf("a deleted hibernated session: %d", st)
			}
		})
	}
}
