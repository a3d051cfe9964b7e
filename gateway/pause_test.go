package gateway_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// TestIdleSessionsPauseAndThaw: a session whose kernel goes unused is
// frozen (the session says paused); a thread the code left running stops
// (the counter it writes to a file stands still); the next completion and
// the next execution thaw it, with its variables, and the thread runs on.
func TestIdleSessionsPauseAndThaw(t *testing.T) {
	for name, rt := range runtimes() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{PauseAfter: 600 * time.Millisecond, ReapInterval: 50 * time.Millisecond})
			c := e.client(keyA)
			ctx := context.Background()
			s := e.create(keyA, nil)
			x := e.exec(keyA, s.ID, `import threading, time
x = 41
def tick():
    n = 0
    while True:
        n += 1
        with open("ticks.txt", "w") as f:
            f.write(str(n))
        time.sleep(0.02)
threading.Thread(target=tick, daemon=True).start()
time.sleep(0.1)`, 30)
			if x.Status != "ok" {
				t.Fatalf("%+v", x)
			}
			waitPaused := func(want bool) {
				t.Helper()
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					info, err := c.GetSession(ctx, s.ID)
					if err != nil {
						t.Fatal(err)
					}
					if info.Paused == want {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("paused never became %v within 20s: last %+v", want, info)
					}
				}
			}
			ticks := func() string {
				t.Helper()
				f, err := c.ReadFile(ctx, s.ID, "ticks.txt")
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				b, _ := io.ReadAll(f)
				return strings.TrimSpace(string(b))
			}
			waitPaused(true)
			if info, _ := c.GetSession(ctx, s.ID); info.PausedByClient {
				t.Errorf("the idle freeze reads as a client's pause: %+v", info)
			}
			frozen := ticks()
			time.Sleep(300 * time.Millisecond) // a running thread would tick 15 times: the absence of a tick is the point
			if again := ticks(); again != frozen {
				t.Fatalf("the paused kernel's thread ran on: %s then %s", frozen, again)
			}
			if info, _ := c.GetSession(ctx, s.ID); info.State != "idle" {
				t.Errorf("a paused session is idle to its clients: %+v", info)
			}
			// A completion thaws it.
			comp, err := c.Complete(ctx, s.ID, "x.bit_l", 7)
			if err != nil || len(comp.Matches) == 0 || comp.Matches[0] != "bit_length" {
				t.Fatalf("completion of a paused kernel: %+v %v", comp, err)
			}
			waitPaused(true)
			// An execution thaws it, variables intact, and the thread runs on.
			if x := e.exec(keyA, s.ID, "x + 1", 30); x.Status != "ok" || string(x.Result) != `{"text/plain":"42"}` {
				t.Fatalf("x + 1 after a pause: %+v %s", x, x.Result)
			}
			before := ticks()
			testkit.Eventually(t, 10*time.Second, func() bool { return ticks() != before },
				"the thread to run again after the thaw: its counter stayed at %s", before)
			// A paused session can be deleted (a frozen process cannot die:
			// the sandbox is thawed first).
			waitPaused(true)
			if err := c.DeleteSession(ctx, s.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetSession(ctx, s.ID); err == nil {
				t.Fatal("the deleted session is still there")
			}
		})
	}
}
