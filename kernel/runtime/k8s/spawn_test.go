package k8s

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSimulatedContextsAndCommands: the pod's supervisor starts contexts
// and commands for the gateway through the agent's spawn tunnel (the
// simulated kubelet runs both for real): a context is a kernel of its own
// in its working directory, another language than the first; a command's
// output, stdin, exit status, env and cwd come through; Kill ends a
// command whose launcher ignores its stdin's end; a bad cwd is a
// *sandbox.SpecError; the first kernel's restart ends the context with the
// reason, and it starts again; Close of the context ends its kernel.
// (The isolation of all this is the real cluster's: TestRealCluster*.)
func TestSimulatedContextsAndCommands(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	rt := newRuntime(t, cs, testConfig("gw-spawn"))
	k := runtimetest.Start(t, rt, sandbox.Spec{ID: "spawn-0001-abcdef", Env: map[string]string{"SESSION_VAR": "from-session"}})
	k.Run(t, "x = 'first'\nimport os; os.makedirs('sub/dir', exist_ok=True)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	r := runtimetest.RunCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "echo out $SESSION_VAR $MINE; pwd; echo err >&2; cat; exit 3",
		Cwd: "sub", Env: map[string]string{"MINE": "mine"}}, "from stdin\n")
	if r.Exit.Code != 3 || r.Stderr != "err\n" || !strings.HasPrefix(r.Stdout, "out from-session mine\n") ||
		!strings.HasSuffix(r.Stdout, "/sub\nfrom stdin\n") {
		t.Fatalf("command: %+v", r)
	}
	if _, err := k.Sandbox.(sandbox.CommandRunner).StartCommand(ctx, sandbox.CommandSpec{Cmd: "true", Cwd: "nowhere"}); !isSpecError(err) {
		t.Fatalf("a cwd that does not exist: %v", err)
	}
	c := runtimetest.StartCommand(t, k.Sandbox, sandbox.CommandSpec{Cmd: "trap '' HUP TERM; sleep 300"})
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if r := runtimetest.ReadCommand(t, c); r.Exit.Code == 0 {
		t.Fatalf("killed command: %+v", r)
	}

	cx, err := k.Sandbox.(sandbox.ContextStarter).StartContext(ctx, sandbox.ContextSpec{Name: "b", Kernel: "bash", Cwd: sandbox.WorkDir + "/sub/dir"})
	if err != nil {
		t.Fatal(err)
	}
	kc := dial(t, cx.Connection())
	if out, _ := (runtimetest.Kernel{Sandbox: cx, Client: kc}).Run(t, "x=second; echo $x $(basename $PWD)"); strings.TrimSpace(out) != "second dir" {
		t.Fatalf("context: %q", out)
	}
	if out, _ := k.Run(t, "print(x)"); strings.TrimSpace(out) != "first" {
		t.Fatalf("first kernel: %q", out)
	}

	// The first kernel's restart ends the context, which says so and
	// starts again.
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	k.Reconnect(t)
	select {
	case <-cx.Exited():
	case <-ctx.Done():
		t.Fatal("the context outlived its pod's first kernel")
	}
	if reason := cx.ExitReason(); !strings.Contains(reason, "restart this context") {
		t.Fatalf("context's exit: %q", reason)
	}
	if err := cx.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	kc.Close()
	kc = dial(t, cx.Connection())
	defer kc.Close()
	if out, _ := (runtimetest.Kernel{Sandbox: cx, Client: kc}).Run(t, "echo again"); strings.TrimSpace(out) != "again" {
		t.Fatalf("context after its restart: %q", out)
	}
	if err := cx.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Sandbox.(sandbox.ContextStarter).StartContext(ctx, sandbox.ContextSpec{Name: "b", Kernel: "python3"}); err != nil {
		t.Fatalf("the name of a closed context: %v", err)
	}
}

func isSpecError(err error) bool {
	var se *sandbox.SpecError
	return errors.As(err, &se)
}

func dial(t *testing.T, info kernel.ConnectionInfo) *kernel.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := kernel.Dial(ctx, info, kernel.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSimulatedFencing: a 409 of the workspace's own (a path that is a
// directory) fences nothing; then gateway A still holds a session (its
// Lease gone: as if partitioned or paused) when gateway B adopts it. B's first
// request to the pod's agent fences A: A's sandbox says so (Fenced, its
// kernel's exit names it) without B's doing anything more, nothing A
// sends reaches the kernel (its cell never runs), and A's close deletes
// nothing; B finds the variables intact.
func TestSimulatedFencing(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	ctx := context.Background()
	rtA := newRuntime(t, cs, testConfig("gw-fa"))
	k := runtimetest.Start(t, rtA, sandbox.Spec{ID: "fence-0001-abcdef", Tenant: "t1"})
	k.Run(t, "x = 41\ncount = 0")
	// The workspace's own 409 (a file written where a directory is) is no
	// fence: only the agent's refusal of an epoch is.
	fsys, tracker, err := k.Sandbox.(sandbox.WorkspaceOpener).OpenWorkspace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.MakeDir("d"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Write("d", strings.NewReader("x")); err == nil {
		t.Fatal("a file written over a directory")
	}
	fsys.Close()
	tracker.Close()
	if sandbox.IsFenced(k.Sandbox) {
		t.Fatal("a workspace's 409 fenced the sandbox")
	}
	if err := rtA.ReleaseLease(ctx); err != nil { // A looks dead; it is not
		t.Fatal(err)
	}
	rtB := newRuntime(t, cs, testConfig("gw-fb"))
	won, _, err := rtB.AdoptSession(ctx, "fence-0001-abcdef")
	if err != nil {
		t.Fatal(err)
	}
	defer won.Close(ctx)
	b := runtimetest.Kernel{Sandbox: won}
	b.Reconnect(t)
	defer b.Client.Close()
	select {
	case <-k.Sandbox.(sandbox.Fenceable).Fenced():
	case <-time.After(30 * time.Second):
		t.Fatal("A was not fenced after B adopted its session")
	}
	<-k.Sandbox.Exited()
	if !strings.Contains(k.Sandbox.ExitReason(), "fenced") {
		t.Fatalf("A's kernel exit: %q", k.Sandbox.ExitReason())
	}
	// A's cell never reaches the kernel.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = k.Client.Execute(cctx, "count += 1", kernel.ExecuteOptions{}, nil)
	cancel()
	if err == nil {
		t.Fatal("A executed a cell after it was fenced")
	}
	if err := k.Sandbox.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if out, _ := b.Run(t, "print(x + 1, count)"); strings.TrimSpace(out) != "42 0" {
		t.Fatalf("B after A's attempts: %q", out)
	}
}

// TestSimulatedSetEnd: a session's end (sandbox.Expiring) is the pod's
// expiry annotation, within its maximum lifetime; a gateway adopting the
// session reads it, and a zero end restores the maximum.
func TestSimulatedSetEnd(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	ctx := context.Background()
	rt := newRuntime(t, cs, testConfig("gw-end"))
	k := runtimetest.Start(t, rt, sandbox.Spec{ID: "end-0001-abcdef", Tenant: "t1"})
	exp := k.Sandbox.(sandbox.Expiring)
	end := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := exp.SetEnd(end); err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, PodName("end-0001-abcdef"), metav1.GetOptions{})
	if err != nil || pod.Annotations[AnnotationExpires] != end.UTC().Format(time.RFC3339) {
		t.Fatalf("expiry after SetEnd(%v): %v %v", end, pod.Annotations[AnnotationExpires], err)
	}
	a, err := rt.describe(ctx, pod)
	if err != nil || !a.Expires.Equal(end) {
		t.Fatalf("what an adopter reads: %v %v", a.Expires, err)
	}
	if err := exp.SetEnd(time.Now().Add(100 * 24 * time.Hour)); err != nil { // past the maximum
		t.Fatal(err)
	}
	pod, _ = cs.CoreV1().Pods(ns).Get(ctx, PodName("end-0001-abcdef"), metav1.GetOptions{})
	if want := pod.CreationTimestamp.Add(rt.cfg.MaxLifetime).UTC().Format(time.RFC3339); pod.Annotations[AnnotationExpires] != want {
		t.Fatalf("an end past the maximum lifetime: %v, want %v", pod.Annotations[AnnotationExpires], want)
	}
}
