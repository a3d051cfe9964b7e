package sessions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
)

// The plumbing of contexts on fake kernels; the real kernels' behaviour
// (variables, shared files, the shared memory limit) is tested through
// the gateway on the real runtimes.
func TestContextsRouteAndClose(t *testing.T) {
	m, rt := fakeManager(t, sessions.Config{MaxContexts: 3})
	s := fakeSession(t, m)
	ctx := context.Background()
	cs := s.Contexts()

	if got := cs.List(); len(got) != 1 || got[0].ID != sessions.FirstContext || got[0].Language != "python3" || !got[0].Default {
		t.Fatalf("a new session's contexts: %+v", got)
	}
	// "python" is the first context; "r" starts R's default context once.
	if first, err := cs.Resolve(ctx, "", "python"); err != nil || first != s.First() {
		t.Fatalf("python resolves to %v, %v; want the first kernel", first, err)
	}
	r1, err := cs.Resolve(ctx, "", "R")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := cs.Resolve(ctx, "", "r")
	if err != nil || r2 != r1 || r1.Name() != "r" {
		t.Fatalf("second r: %v (kernel %s), %v", r2, r1.Name(), err)
	}
	sub := s.Subscribe(0)
	defer sub.Close()
	if _, err := r1.Execute(ctx, sessions.ExecRequest{ID: "in-r", Code: "print:hi"}); err != nil {
		t.Fatal(err)
	}
	sawContext := false
	testkit.Eventually(t, 10*time.Second, func() bool {
		select {
		case ev := <-sub.C:
			if ev.ID == "in-r" && ev.Type == sessions.EventStream {
				sawContext = ev.Context != "" && ev.Context != sessions.FirstContext
			}
			return ev.ID == "in-r" && ev.Type == sessions.EventDone
		default:
			return false
		}
	}, "the R context's events on the session's stream")
	if !sawContext {
		t.Fatal("the R context's stream event does not name its context")
	}

	// A context and a language that disagree, unknown and uninstalled
	// languages, and the limit are refused.
	list := cs.List()
	var rID string
	for _, c := range list {
		if c.Language == "r" {
			rID = c.ID
		}
	}
	if _, err := cs.Resolve(ctx, rID, "python"); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("context r with language python: %v", err)
	}
	for _, lang := range []string{"cobol", "java"} {
		if _, err := cs.Create(ctx, lang, ""); !errors.Is(err, sessions.ErrInvalid) {
			t.Fatalf("create %s: %v, want ErrInvalid", lang, err)
		}
	}
	if _, err := cs.Create(ctx, "bash", "../etc"); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("a cwd outside the workspace: %v", err)
	}
	b, err := cs.Create(ctx, "bash", "sub/dir")
	if err != nil || b.Cwd != "/home/user/sub/dir" || b.Default {
		t.Fatalf("create bash: %+v, %v", b, err)
	}
	if _, err := cs.Create(ctx, "bash", ""); !errors.Is(err, sessions.ErrTooManyContexts) {
		t.Fatalf("a fourth context with MaxContexts 3: %v", err)
	}
	if _, err := cs.Get("nope"); !errors.Is(err, sessions.ErrContextNotFound) {
		t.Fatalf("get an unknown context: %v", err)
	}
	if err := cs.Delete(ctx, sessions.FirstContext); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("delete the first context: %v", err)
	}

	// Deleting one leaves the others; closing the session ends them all.
	if err := cs.Delete(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(cs.List()); n != 2 {
		t.Fatalf("%d contexts after a delete, want 2", n)
	}
	if _, err := r1.Execute(ctx, sessions.ExecRequest{Code: "print:still"}); err != nil {
		t.Fatalf("the R context after another's delete: %v", err)
	}
	if live := rt.LiveSandboxes(); live != 2 {
		t.Fatalf("%d kernels live, want 2 (first and r)", live)
	}
	if err := m.Delete(ctx, "t", s.ID()); err != nil {
		t.Fatal(err)
	}
	if live := rt.LiveSandboxes(); live != 0 {
		t.Fatalf("%d kernels live after the session's delete", live)
	}
}

// TestOfferedKernels: Config.Kernels leaves out the runtime's other
// kernels, which are then refused as not installed and not listed; a
// configuration naming an unknown kernel, or leaving out python3, is
// refused.
func TestOfferedKernels(t *testing.T) {
	m, _ := fakeManager(t, sessions.Config{Kernels: []string{"python", "BASH"}})
	var names []string
	for _, k := range m.InstalledKernels() {
		names = append(names, k.Name)
	}
	if strings.Join(names, ",") != "python3,bash" {
		t.Fatalf("offered: %v", names)
	}
	if _, err := m.ResolveKernel("r"); !errors.Is(err, sessions.ErrInvalid) || !strings.Contains(err.Error(), "r is not installed on this gateway") {
		t.Fatalf("resolve r: %v", err)
	}
	if k, err := m.ResolveKernel("sh"); err != nil || k != "bash" {
		t.Fatalf("resolve sh: %q %v", k, err)
	}
	for _, c := range [][]string{{"python3", "cobol"}, {"r"}} {
		if err := (sessions.Config{Kernels: c}).Validate(); err == nil {
			t.Errorf("kernels %v accepted", c)
		}
	}
}
