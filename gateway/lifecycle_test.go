package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	glclient "github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// TestPauseAtTimeout: a session whose lifecycle says pause is frozen at
// its timeout instead of ended (E2B's lifecycle on_timeout "pause"),
// its variables kept: without auto_resume its executions are 409 until a
// client resumes it, with auto_resume its next execution resumes it;
// either way its lifetime starts again. A session that asks nothing ends.
func TestPauseAtTimeout(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			create := func(lc *api.Lifecycle) api.Session {
				t.Helper()
				life := 300.0
				var s api.Session
				if st := e.call(keyA, "POST", "/v1/sessions", api.CreateSessionRequest{LifetimeS: &life, Lifecycle: lc}, &s); st != http.StatusCreated {
					t.Fatalf("create: %d", st)
				}
				return s
			}
			get := func(id string) (int, api.Session) {
				t.Helper()
				var s api.Session
				st := e.call(keyA, "GET", "/v1/sessions/"+id, nil, &s)
				return st, s
			}
			timeout := func(id string) { // E2B's set_timeout(0): the timeout is now
				t.Helper()
				zero := 0.0
				if st := e.call(keyA, "PATCH", "/v1/sessions/"+id, api.UpdateSessionRequest{LifetimeS: &zero}, nil); st != http.StatusOK {
					t.Fatalf("PATCH lifetime_s 0: %d", st)
				}
			}
			pausedAtTimeout := func(id string) {
				t.Helper()
				testkit.Eventually(t, time.Minute, func() bool { _, s := get(id); return s.PausedAtTimeout }, "the session paused at its timeout")
				if st, s := get(id); st != http.StatusOK || !s.PausedByClient || !s.Paused || s.Lifecycle == nil || s.Lifecycle.OnTimeout != "pause" {
					t.Fatalf("paused at its timeout: %d %+v", st, s)
				}
			}

			// Without auto_resume: 409 until resumed.
			s := create(&api.Lifecycle{OnTimeout: "pause"})
			if x := e.exec(keyA, s.ID, "x = 41", 60); x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			timeout(s.ID)
			pausedAtTimeout(s.ID)
			var ae apiErr
			if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]string{"code": "x"}, &ae); st != http.StatusConflict || ae.Error.Code != "session_paused" {
				t.Fatalf("an execution while paused: %d %+v", st, ae)
			}
			if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/resume", nil, nil); st != http.StatusOK {
				t.Fatalf("resume: %d", st)
			}
			if st, again := get(s.ID); st != http.StatusOK || again.Paused || again.PausedAtTimeout || time.Until(again.EndAt) < 200*time.Second {
				t.Fatalf("resumed: its lifetime starts again: %d %+v", st, again)
			}
			if x := e.exec(keyA, s.ID, "x + 1", 60); x.Status != "ok" || string(x.Result) != `{"text/plain":"42"}` {
				t.Fatalf("the variable after the resume: %+v", x)
			}

			// With auto_resume: the next execution resumes it.
			a := create(&api.Lifecycle{OnTimeout: "pause", AutoResume: true})
			if x := e.exec(keyA, a.ID, "y = 1", 60); x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			ws := e.ws(keyA, a.ID, "") // its stream says when it pauses and wakes
			timeout(a.ID)
			pausedAtTimeout(a.ID)
			ws.until(func(f frame) bool { return f.Type == "kernel" && strings.HasPrefix(f.Reason, "paused at its timeout") })
			if x := e.exec(keyA, a.ID, "y + 1", 60); x.Status != "ok" || string(x.Result) != `{"text/plain":"2"}` {
				t.Fatalf("an execution resumes it with its variables: %+v", x)
			}
			ws.until(func(f frame) bool {
				return f.Type == "kernel" && f.Reason == "resumed by its use after a pause at its timeout"
			})
			if st, again := get(a.ID); st != http.StatusOK || again.Paused || again.PausedAtTimeout || time.Until(again.EndAt) < 200*time.Second {
				t.Fatalf("resumed by its use: %d %+v", st, again)
			}

			// Without a lifecycle it ends.
			k := create(nil)
			timeout(k.ID)
			testkit.Eventually(t, time.Minute, func() bool { st, _ := get(k.ID); return st == http.StatusNotFound }, "the session without a lifecycle ended")

			for _, lc := range []api.Lifecycle{{OnTimeout: "hibernate"}, {AutoResume: true}, {OnTimeout: "kill", AutoResume: true}} {
				if st := e.call(keyA, "POST", "/v1/sessions", api.CreateSessionRequest{Lifecycle: &lc}, &ae); st != http.StatusBadRequest {
					t.Fatalf("lifecycle %+v: %d", lc, st)
				}
			}
		})
	}
}

// TestPauseAtTimeoutEndsAtMaxLifetime: a session that pauses at its
// timeout still ends at the gateway's maximum lifetime.
func TestPauseAtTimeoutEndsAtMaxLifetime(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{MaxLifetime: 3 * time.Second})
	s, err := e.client(keyA).CreateSession(context.Background(), glclient.CreateOptions{Lifecycle: &glclient.Lifecycle{OnTimeout: "pause", AutoResume: true}})
	if err != nil || s.Lifecycle == nil || !s.Lifecycle.AutoResume {
		t.Fatalf("create: %+v %v", s, err)
	}
	testkit.Eventually(t, time.Minute, func() bool {
		return e.call(keyA, "GET", "/v1/sessions/"+s.ID, nil, nil) == http.StatusNotFound
	}, "the session ended at the maximum lifetime")
}

// TestDeletePausedSessionWithCommand: a session paused at its timeout
// whose command still runs is deleted at once, after a kill of that
// command: its close thaws the sandbox first (a frozen launcher never
// reports its command's end, so the close would wait for ever, and the
// gateway's shutdown with it).
func TestDeletePausedSessionWithCommand(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			c := e.client(keyA)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := c.CreateSession(ctx, glclient.CreateOptions{Lifecycle: &glclient.Lifecycle{OnTimeout: "pause", AutoResume: true}})
			if err != nil {
				t.Fatal(err)
			}
			var started struct{ PID int }
			if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/commands", map[string]any{"cmd": "python3 -m http.server 8000", "background": true}, &started); st != http.StatusCreated {
				t.Fatalf("start a command: %d", st)
			}
			zero := 0.0
			if st := e.call(keyA, "PATCH", "/v1/sessions/"+s.ID, api.UpdateSessionRequest{LifetimeS: &zero}, nil); st != http.StatusOK {
				t.Fatalf("PATCH lifetime_s 0: %d", st)
			}
			testkit.Eventually(t, time.Minute, func() bool {
				got, err := c.GetSession(ctx, s.ID)
				return err == nil && got.PausedAtTimeout
			}, "the session paused at its timeout")
			if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/commands/"+strconv.Itoa(started.PID)+"/kill", nil, nil); st != http.StatusNoContent {
				t.Fatalf("kill the command: %d", st)
			}
			if err := c.DeleteSession(ctx, s.ID); err != nil {
				t.Fatalf("delete the paused session: %v", err)
			}
			if _, err := c.GetSession(ctx, s.ID); !errors.Is(err, glclient.ErrNotFound) {
				t.Fatalf("after the delete: %v", err)
			}
		})
	}
}
