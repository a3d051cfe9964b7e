package runtimetest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
)

// CapabilityOptions says what Capabilities needs to know of a runtime.
type CapabilityOptions struct {
	// NewID returns a fresh session id.
	NewID func() string
	// NoFreeze says the runtime's sandboxes cannot freeze: their Freeze
	// must return sandbox.ErrNoFreeze and leave the kernel running.
	NoFreeze bool
	// Successor, for a runtime whose sandboxes are Persistent, returns the
	// runtime of the next gateway, the one that adopts what this one
	// detached; it may close the runtime under test first (docker: one of
	// the same instance and state directory, adopting). Nil: the runtime
	// under test adopts what it detached itself.
	Successor func(t *testing.T) sandbox.Adopter
}

// Capabilities exercises, on a real kernel of rt, each optional capability
// that rt (sandbox.StateDirHolder, Adopter, OrphanFinder) and its
// sandboxes (sandbox.Freezer, WorkspaceOpener, TenantRecorder, Persistent)
// have, and logs which they have. Every runtime's tests call it once; the
// runtime packages check the same capabilities at compile time.
//
// The Persistent part runs last: it detaches the kernel and adopts it
// (through opts.Successor, which may close rt), then reconciles and closes.
func Capabilities(t *testing.T, rt Starter, opts CapabilityOptions) {
	k := Start(t, rt, sandbox.Spec{ID: opts.NewID()})
	k.Run(t, "x = 41")
	have := []string{}
	check := func(name string, f func(t *testing.T)) {
		have = append(have, name)
		t.Run(name, f)
	}
	if sd, ok := rt.(sandbox.StateDirHolder); ok {
		check("StateDirHolder", func(t *testing.T) { checkStateDir(t, sd.StateDir(), k) })
	}
	if fz, ok := k.Sandbox.(sandbox.Freezer); ok {
		check("Freezer", func(t *testing.T) { checkFreezer(t, k, fz, opts.NoFreeze) })
	}
	wo, ok := k.Sandbox.(sandbox.WorkspaceOpener)
	if ok {
		check("WorkspaceOpener", func(t *testing.T) { checkWorkspaceOpener(t, k, wo) })
	} else if ws := k.Sandbox.Workspace(); ws == "" {
		t.Error("the sandbox has no workspace on this host and cannot open one (WorkspaceOpener)")
	}
	tenant := ""
	if tr, ok := k.Sandbox.(sandbox.TenantRecorder); ok {
		check("TenantRecorder", func(t *testing.T) { tenant = checkTenantRecorder(t, tr) })
	}
	if p, ok := k.Sandbox.(sandbox.Persistent); ok {
		check("Persistent", func(t *testing.T) { checkPersistent(t, rt, k, p, tenant, opts.Successor) })
	} else if _, ok := rt.(sandbox.Adopter); ok {
		t.Error("an Adopter whose sandboxes are not Persistent")
	}
	if _, ok := rt.(sandbox.Adopter); ok {
		have = append(have, "Adopter") // exercised by Persistent
	}
	if _, ok := rt.(sandbox.OrphanFinder); ok {
		have = append(have, "OrphanFinder") // exercised by Persistent
	}
	t.Logf("%T: %s", rt, strings.Join(have, ", "))
}

// checkStateDir: an absolute state directory (or none); a runtime whose
// sandboxes have a workspace on this host keeps it there.
func checkStateDir(t *testing.T, dir string, k Kernel) {
	ws := k.Sandbox.Workspace()
	switch {
	case dir == "" && ws == "":
		t.Log("no state directory")
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		t.Fatalf("state directory %q: want an absolute, clean path", dir)
	case ws != "" && !strings.HasPrefix(ws, dir+"/"):
		t.Fatalf("the workspace %s is not in the state directory %s", ws, dir)
	case ws != "":
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Fatalf("state directory %s: %v", dir, err)
		}
	}
}

// checkFreezer freezes the sandbox and thaws it. While it is frozen a
// thread of the kernel, which stamps the time every 5 ms, stands still;
// after the thaw it runs on, and the kernel answers with its variables.
// A runtime that cannot freeze refuses with ErrNoFreeze, kernel running.
func checkFreezer(t *testing.T, k Kernel, fz sandbox.Freezer, noFreeze bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if noFreeze {
		if err := fz.Freeze(ctx); !errors.Is(err, sandbox.ErrNoFreeze) || fz.Frozen() {
			t.Fatalf("Freeze of a runtime that cannot: %v (frozen %v), want ErrNoFreeze", err, fz.Frozen())
		}
		if out, _ := k.Run(t, "x + 1"); out != `"42"` {
			t.Fatalf("the kernel after a refused freeze: x + 1 = %s", out)
		}
		return
	}
	k.Run(t, `import threading, time
stamps, stop = [], threading.Event()
def stamp():
    while not stop.is_set():
        stamps.append(time.time()); time.sleep(0.005)
threading.Thread(target=stamp, daemon=True).start()
while not stamps: time.sleep(0.001)`)
	if err := fz.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	if !fz.Frozen() {
		t.Fatal("not Frozen after Freeze")
	}
	if err := fz.Freeze(ctx); err != nil || !fz.Frozen() {
		t.Fatalf("a second Freeze: %v (frozen %v)", err, fz.Frozen())
	}
	time.Sleep(400 * time.Millisecond) // not an order: the time a running thread would stamp 80 times
	thawing := time.Now()
	if err := fz.Thaw(ctx); err != nil {
		t.Fatal(err)
	}
	if fz.Frozen() {
		t.Fatal("Frozen after Thaw")
	}
	if err := fz.Thaw(ctx); err != nil {
		t.Fatalf("Thaw of a running sandbox: %v", err)
	}
	// 50 ms inside each end, for clocks that differ a little (gVisor).
	lo, hi := unix(frozen.Add(50*time.Millisecond)), unix(thawing.Add(-50*time.Millisecond))
	out, _ := k.Run(t, `t0 = time.time()
while stamps[-1] <= t0: time.sleep(0.001)
stop.set()
print(sum(1 for s in stamps if `+lo+` < s < `+hi+`), x + 1)`)
	if got := strings.TrimSpace(out); got != "0 42" {
		t.Fatalf("stamps while frozen, x + 1: %q, want \"0 42\"", got)
	}
}

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 6, 64) }

// checkWorkspaceOpener: a sandbox whose workspace is not on this host
// opens it: an upload the kernel reads, a file it writes downloaded, the
// changes tracked, a path out of the workspace refused.
func checkWorkspaceOpener(t *testing.T, k Kernel, wo sandbox.WorkspaceOpener) {
	if ws := k.Sandbox.Workspace(); ws != "" {
		t.Errorf("a WorkspaceOpener whose workspace is on this host (%s)", ws)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	files, tracker, err := wo.OpenWorkspace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = files.Close() }()
	if tracker != nil {
		defer func() { _ = tracker.Close() }()
		tracker.Reset()
	}
	if _, err := files.Write("data.csv", strings.NewReader("a,b\n1,2\n")); err != nil {
		t.Fatal(err)
	}
	if out, _ := k.Run(t, "print(open('data.csv').read().split()[1])\n_ = open('out.txt', 'w').write('hi')"); strings.TrimSpace(out) != "1,2" {
		t.Fatalf("the kernel reads the upload: %q", out)
	}
	if tracker != nil {
		changes, truncated := tracker.Changes()
		if truncated || len(changes) != 2 || changes[0].Path != "data.csv" || changes[1] != (workspace.Change{Path: "out.txt", Size: 2, Change: "created"}) {
			t.Fatalf("changes %+v %v", changes, truncated)
		}
	}
	f, _, err := files.OpenFile("out.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hi" {
		t.Fatalf("download %q", b)
	}
	if _, _, err := files.OpenFile("../secret/kernel.json"); !errors.Is(err, workspace.ErrBadPath) {
		t.Fatalf("a path out of the workspace: %v, want ErrBadPath", err)
	}
}

// checkTenantRecorder records a tenant (checked by checkPersistent, where
// another gateway reads it) and refuses one of the wrong shape.
func checkTenantRecorder(t *testing.T, tr sandbox.TenantRecorder) string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tr.RecordTenant(ctx, "not a tenant/"); !errors.Is(err, sandbox.ErrBadSpec) {
		t.Fatalf("RecordTenant of a bad tenant: %v, want ErrBadSpec", err)
	}
	const tenant = "capability-tenant"
	if err := tr.RecordTenant(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	return tenant
}

// checkPersistent: the sandbox's State describes it and changes with a
// restart; detached, it is found by an OrphanFinder (with its recorded
// tenant) and adopted by the next gateway's runtime, kernel and variables
// intact; Reconcile leaves it alone; once closed it cannot be adopted.
func checkPersistent(t *testing.T, rt Starter, k Kernel, p sandbox.Persistent, tenant string, successor func(*testing.T) sandbox.Adopter) {
	ad, ok := rt.(sandbox.Adopter)
	if !ok {
		t.Fatal("Persistent sandboxes of a runtime that cannot adopt them (no Adopter)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	st := p.State()
	if st.ID != k.Sandbox.ID() || st.Conn != k.Sandbox.Connection() || st.Limits != k.Sandbox.Limits() || st.Incarnation == "" {
		t.Fatalf("State of sandbox %s: id %q, incarnation %q, limits %+v (the sandbox's %+v), connection the sandbox's: %v",
			k.Sandbox.ID(), st.ID, st.Incarnation, st.Limits, k.Sandbox.Limits(), st.Conn == k.Sandbox.Connection())
	}
	if err := k.Sandbox.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if inc := p.State().Incarnation; inc == st.Incarnation {
		t.Fatalf("the incarnation %q did not change with a restart", inc)
	}
	k.Reconnect(t)
	k.Run(t, "y = 7")
	st = p.State()
	if err := p.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if of, ok := rt.(sandbox.OrphanFinder); ok {
		orphans, err := of.Orphans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, o := range orphans {
			if o.State.ID != st.ID {
				continue
			}
			found = true
			if o.State.Incarnation != st.Incarnation || o.State.Conn.Key != st.Conn.Key || o.State.Limits != st.Limits || o.Tenant != tenant {
				t.Fatalf("orphan: incarnation %q, limits %+v, tenant %q, same key %v; the detached sandbox: %q, %+v, %q",
					o.State.Incarnation, o.State.Limits, o.Tenant, o.State.Conn.Key == st.Conn.Key, st.Incarnation, st.Limits, tenant)
			}
		}
		if !found {
			t.Fatalf("the detached sandbox is not among the orphans %+v", orphans)
		}
	}
	if successor != nil {
		ad = successor(t)
	}
	sb, err := ad.Adopt(ctx, st)
	if err != nil {
		t.Fatalf("adopt: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	if got := sb.(sandbox.Persistent).State().Incarnation; got != st.Incarnation {
		t.Fatalf("incarnation %q after adoption, want %q (the same kernel)", got, st.Incarnation)
	}
	adopted := Kernel{Sandbox: sb}
	adopted.Reconnect(t)
	if out, _ := adopted.Run(t, "print(y)"); strings.TrimSpace(out) != "7" {
		t.Fatalf("variables after adoption: %q", out)
	}
	if err := ad.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if out, _ := adopted.Run(t, "print(y + 1)"); strings.TrimSpace(out) != "8" {
		t.Fatalf("the adopted kernel after Reconcile: %q", out)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if again, err := ad.Adopt(ctx, st); err == nil {
		_ = again.Close(context.Background())
		t.Fatal("a closed sandbox was adopted")
	}
}
