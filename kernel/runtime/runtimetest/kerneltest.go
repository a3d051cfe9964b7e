// Package runtimetest holds helpers shared by the runtime packages' tests:
// start a sandbox, connect to its kernel, run code and collect its text;
// and the suites every runtime runs on real kernels: Hardening (the
// protections every runtime must give) and Capabilities (each optional
// capability it has). It is imported by tests only.
package runtimetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// Starter is what a runtime offers tests.
type Starter interface {
	Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error)
}

// Kernel is a started sandbox with a connected client. Both are closed
// when the test ends.
type Kernel struct {
	Sandbox sandbox.Sandbox
	Client  *kernel.Client
}

// Start starts a sandbox for spec and connects to it, failing the test on error.
func Start(t testing.TB, rt Starter, spec sandbox.Spec) Kernel {
	t.Helper()
	testkit.RealThing(t, "a real sandboxed kernel")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sb, err := rt.Start(ctx, spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	k := Kernel{Sandbox: sb}
	k.Reconnect(t)
	return k
}

// Reconnect dials the sandbox's current kernel (after a restart).
func (k *Kernel) Reconnect(t testing.TB) {
	t.Helper()
	k.reconnect(t, t)
}

// reconnect dials like Reconnect, failing t; the client is closed when
// owner (t or a test it runs in) ends.
func (k *Kernel) reconnect(t, owner testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := kernel.Dial(ctx, k.Sandbox.Connection(), kernel.Config{}, zerolog.New(zerolog.NewTestWriter(owner)).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	owner.Cleanup(func() { _ = c.Close() })
	k.Client = c
}

// Run executes code and returns its stdout+stderr, results (text/plain as
// JSON) and error text, plus the error name ("" when it succeeded).
func (k Kernel) Run(t testing.TB, code string) (out, ename string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var b strings.Builder
	_, err := k.Client.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) {
		switch ev.Kind {
		case kernel.EventStream:
			b.WriteString(ev.Text)
		case kernel.EventResult:
			b.Write(ev.Data["text/plain"])
		case kernel.EventError:
			ename = ev.EName
			b.WriteString(ev.EName + ": " + ev.EValue)
		}
	})
	if err != nil {
		t.Fatalf("execute %q: %v", code, err)
	}
	return b.String(), ename
}
