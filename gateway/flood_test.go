package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
)

// floodCases are output floods ordinary code produces. Each must end
// truncated, with the kernel and its variables alive.
var floodCases = []struct {
	name, code string
	timeout    float64
	status     sessions.Status
}{
	{"100 MB written in 1 MB pieces", "import sys; [sys.stdout.write('z' * 1_000_000) for _ in range(100)]", 0, sessions.StatusOK},
	{"a print loop until the timeout", "while True: print('x' * 10000)", 5, sessions.StatusTimeout},
	{"one 30 MB result", "'r' * 30_000_000", 0, sessions.StatusOK},
}

func TestFloodsTruncateAndKeepState(t *testing.T) {
	for name, rt := range runtimes() {
		if name == "docker-runsc" {
			continue // same code path as docker; gVisor is slow to flood
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{})
			s := e.create(keyA, nil)
			e.exec(keyA, s.ID, "x = 41", 0)
			for _, fc := range floodCases {
				t.Run("rest/"+fc.name, func(t *testing.T) {
					x := e.exec(keyA, s.ID, fc.code, fc.timeout)
					if x.Status != fc.status || !x.Truncated || x.StateLost {
						t.Fatalf("want %s, truncated, state kept; got status=%s truncated=%v state_lost=%v reason=%q", fc.status, x.Status, x.Truncated, x.StateLost, x.Reason)
					}
					// The state survives. The first cell after a flood may lose
					// its own output while the kernel's iopub backlog drains
					// (ZeroMQ's PUB socket drops past its high-water mark), so
					// a few tries are allowed.
					var y sessions.Execution
					for try := 0; try < 5; try++ {
						if y = e.exec(keyA, s.ID, "x + 1", 0); string(y.Result) == `{"text/plain":"42"}` {
							break
						}
					}
					if string(y.Result) != `{"text/plain":"42"}` {
						t.Fatalf("x + 1 after the flood: %+v", y)
					}
				})
			}
			w := e.ws(keyA, s.ID, "")
			for i, fc := range floodCases {
				t.Run("ws/"+fc.name, func(t *testing.T) {
					id := fmt.Sprintf("flood-%d", i)
					body := map[string]any{"type": "execute", "id": id, "code": fc.code}
					if fc.timeout > 0 {
						body["timeout_s"] = fc.timeout
					}
					w.send(body)
					d := w.until(doneFor(id))
					done := d[len(d)-1]
					if done.Status != fc.status || !isTrue(done.Truncated) || isTrue(done.StateLost) {
						t.Fatalf("done: %+v", done)
					}
					// As over REST: the state survives; the first cells after
					// a flood may lose their output while iopub drains.
					res := ""
					var seen []string
					for try := 0; try < 5 && res != `{"text/plain":"42"}`; try++ {
						check := fmt.Sprintf("%s-check-%d", id, try)
						w.send(map[string]any{"type": "execute", "id": check, "code": "x + 1"})
						for _, ev := range w.until(doneFor(check)) {
							seen = append(seen, fmt.Sprintf("%s(%s)", ev.Type, ev.ID))
							if ev.Type == sessions.EventResult {
								res = string(ev.Data)
							}
						}
					}
					if res != `{"text/plain":"42"}` {
						t.Fatalf("x + 1 after the flood: %q; frames: %v", res, seen)
					}
				})
			}
		})
	}
}

// TestWebSocketBackToBackLoop is an agent loop: 300 executes, each sent as
// soon as the previous one is done, faster than the frame rate allows.
// Nothing is rejected or lost: the server reads more slowly instead.
func TestWebSocketBackToBackLoop(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	w := e.ws(keyA, s.ID, "")
	start := time.Now()
	w.send(map[string]any{"type": "execute", "id": "init", "code": "n = 0"})
	w.until(doneFor("init"))
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("loop-%d", i)
		w.send(map[string]any{"type": "execute", "id": id, "code": "n += 1"})
		for _, ev := range w.until(func(f frame) bool { return f.Type == "rejected" || (f.Type == "done" && f.ID == id) }) {
			if ev.Type == "rejected" {
				t.Fatalf("execute %d rejected: %+v", i, ev)
			}
		}
	}
	// And a burst: 100 executes without waiting, then their results.
	for i := 0; i < 100; i++ {
		w.send(map[string]any{"type": "execute", "id": fmt.Sprintf("burst-%d", i), "code": "n += 1"})
	}
	for _, ev := range w.until(doneFor("burst-99")) {
		if ev.Type == "rejected" {
			t.Fatalf("burst execute rejected: %+v", ev)
		}
	}
	if x := e.exec(keyA, s.ID, "n", 0); string(x.Result) != `{"text/plain":"400"}` {
		t.Fatalf("n = %s, want 400", x.Result)
	}
	t.Logf("400 executes over one WebSocket in %v", time.Since(start).Round(time.Millisecond))
}

// TestRejectionsNameTheFrame: whatever is still refused names the frame's id.
func TestRejectionsNameTheFrame(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{MaxCodeBytes: 100})
	s := e.create(keyA, nil)
	w := e.ws(keyA, s.ID, "")
	w.send(map[string]any{"type": "execute", "id": "too-big", "code": strings.Repeat("1", 200)})
	r := w.until(func(f frame) bool { return f.Type == "rejected" })
	if got := r[len(r)-1]; got.ID != "too-big" || got.Code != "bad_request" {
		t.Fatalf("rejection %+v", got)
	}
}

// isTrue reads an optional flag of an event (absent means false).
func isTrue(p *bool) bool { return p != nil && *p }
