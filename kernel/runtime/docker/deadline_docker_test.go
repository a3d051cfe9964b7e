package docker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
)

// dockerClient is a client of the tests' engine, closed with the test.
func dockerClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// leftBehind removes, when the test ends, what a detached sandbox leaves
// (no gateway will): its container and its session directory.
func leftBehind(t *testing.T, cli *client.Client, name, sessionDir string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
		_ = sandbox.RemoveDir(sessionDir)
	})
}

// waitExit waits for the container's exit (the engine's wait, not a
// clock), at most within; what says what the wait is for.
func waitExit(t *testing.T, cli *client.Client, name string, within time.Duration, what string) (code int64, ended bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	waitC, errC := cli.ContainerWait(ctx, name, container.WaitConditionNotRunning)
	select {
	case res := <-waitC:
		return res.StatusCode, true
	case err := <-errC:
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return 0, false
		}
		t.Fatalf("waiting for %s (%s): %v", name, what, err)
	}
	return 0, false
}

// TestDetachedSandboxEndsItself: a sandbox detached (the gateway's
// SIGTERM with keep) that no gateway adopts stops by itself, without any
// gateway: at its session's end, or once the orphan grace has passed
// since the detach if that is sooner, with DeadlineExit, and not before.
// The kernel, which runs as the uid of the container's init, can neither
// move its deadline (the file is the gateway's, read-only) nor stop or
// kill the init.
func TestDetachedSandboxEndsItself(t *testing.T) {
	cli := dockerClient(t)
	cases := []struct {
		name  string
		grace time.Duration
		end   time.Duration // the session's end, from the detach
	}{
		{"at its session's end", time.Hour, 6 * time.Second},
		// The grace also bounds the start (no runtime renews it here): a
		// start under gVisor on a loaded machine takes seconds.
		{"at the orphan grace", 12 * time.Second, time.Hour},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRuntime(t, docker.Config{OrphanGrace: tc.grace, Common: sandbox.Common{MaxSandboxes: 8}})
			id := "deadline-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
			k := runtimetest.Start(t, r, sandbox.Spec{ID: id})
			name := r.ContainerName(id)
			leftBehind(t, cli, name, filepath.Join(r.StateDir(), id))
			if tc.end < tc.grace {
				// Linux delivers no SIGKILL or SIGSTOP sent from inside a
				// pid namespace to its init: they are sent and dropped.
				// gVisor delivers them (a hostile kernel can stop the init
				// there: see the package doc), so they are not sent there.
				signals := "(signal.SIGSTOP, signal.SIGKILL)"
				if underGVisor(t) {
					signals = "()"
				}
				out, ename := k.Run(t, `
import os, signal
tries = []
for name in ("`+docker.DeadlineFile+`", "`+docker.DeadlineDir+`/new"):
    try:
        open(name, "w").write("9999999999\n")
        tries.append("write:done")
    except OSError as e:
        tries.append("write:refused")
for sig in `+signals+`:
    os.kill(1, sig)
try:
    open("/proc/1/mem", "rb")
    tries.append("mem:opened")
except OSError as e:
    tries.append("mem:refused")
print(" ".join(tries), open("/proc/1/status").read().split("State:")[1].split()[0])
`)
				if want := "write:refused write:refused mem:refused S"; ename != "" || strings.TrimSpace(out) != want {
					t.Fatalf("the kernel's attempts on its deadline and its init: %q %s, want %q (the writes and /proc/1/mem refused, the init sleeping)", out, ename, want)
				}
			}
			e := k.Sandbox.(sandbox.Expiring)
			detach := time.Now()
			end := detach.Add(tc.end)
			if err := e.SetEnd(end); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := k.Sandbox.(sandbox.Persistent).Detach(ctx); err != nil {
				t.Fatal(err)
			}
			r.Close() // the gateway is gone
			want := detach.Add(min(tc.end, tc.grace))
			code, ended := waitExit(t, cli, name, 90*time.Second, "its deadline "+want.Format(time.RFC3339))
			if !ended {
				t.Fatalf("the detached container %s did not end by itself within 90 s of its deadline %v", name, want)
			}
			if code != docker.DeadlineExit || time.Now().Before(want) {
				t.Fatalf("the detached container ended with exit code %d at %v, want %d at its deadline %v, not before", code, time.Now(), docker.DeadlineExit, want)
			}
		})
	}
}

// TestHeldSandboxOutlivesTheGrace: while a gateway holds a sandbox (its
// runtime's Run renews the deadline) it runs well past the orphan grace;
// detached and adopted by the next gateway within the grace, it runs on
// past it too, its kernel's variables kept.
func TestHeldSandboxOutlivesTheGrace(t *testing.T) {
	cli := dockerClient(t)
	const grace = 3 * time.Second
	cfg := docker.Config{OrphanGrace: grace, Instance: "held-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36), Common: sandbox.Common{MaxSandboxes: 8}}
	cfg.StateDir = t.TempDir()
	cfg.UIDBase = testkit.UIDBase(t) // the successor adopts on the same uids
	os.Chmod(cfg.StateDir, 0o711)
	run := func(r *docker.Runtime) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	first := newRuntime(t, cfg)
	stopFirst := run(first)
	id := "held-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	k := runtimetest.Start(t, first, sandbox.Spec{ID: id})
	name := first.ContainerName(id)
	leftBehind(t, cli, name, filepath.Join(cfg.StateDir, id))
	if err := k.Sandbox.(sandbox.Expiring).SetEnd(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	k.Run(t, "x = 41")
	if code, ended := waitExit(t, cli, name, 4*grace, "nothing: a held sandbox must not end"); ended {
		t.Fatalf("a held sandbox ended (exit code %d) while its gateway renewed its deadline", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := k.Sandbox.(sandbox.Persistent)
	st := p.State()
	if err := p.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	stopFirst()
	first.Close()

	next := cfg
	next.Adopting = true
	second := newRuntime(t, next)
	defer run(second)()
	sb, err := second.Adopt(ctx, st)
	if err != nil {
		t.Fatalf("adopt within the grace: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	if code, ended := waitExit(t, cli, name, 4*grace, "nothing: an adopted sandbox must not end"); ended {
		t.Fatalf("an adopted sandbox ended (exit code %d) while its new gateway held it", code)
	}
	adopted := runtimetest.Kernel{Sandbox: sb}
	adopted.Reconnect(t)
	if out, _ := adopted.Run(t, "print(x + 1)"); strings.TrimSpace(out) != "42" {
		t.Fatalf("the adopted kernel lost its variables: %q", out)
	}
}
