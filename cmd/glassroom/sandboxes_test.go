package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
)

// TestParseSandboxes: the command's flags; local and k8s say why there is
// nothing to list.
func TestParseSandboxes(t *testing.T) {
	o, err := parseSandboxes([]string{"--remove", "--state-dir", "/a", "--state-dir", "/b", "--instance", "blue"}, &bytes.Buffer{})
	if err != nil || !o.remove || len(o.stateDirs) != 2 || o.instance != "blue" || o.runtime != "docker" {
		t.Fatalf("parse: %+v %v", o, err)
	}
	for _, args := range [][]string{{"--runtime", "local"}, {"--runtime", "k8s"}, {"--runtime", "podman"}, {"extra"}, {"--timeout", "0s"}} {
		if _, err := parseSandboxes(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if _, err := parseSandboxes([]string{"-h"}, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// TestDetachedKernelsEndThemselves runs two docker gateways of the real
// binary. The first stops (SIGTERM, kernels kept for a next gateway that
// never comes): its session with a short lifetime ends by itself at its
// lifetime's end, waited for on the engine, no gateway running. Then
// `glassroom sandboxes` lists the first gateway's containers as owned by
// no gateway and the second's as its own, and `--remove` removes the
// first's, session directories too, and leaves the live gateway's running.
func TestDetachedKernelsEndThemselves(t *testing.T) {
	requireDocker(t)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		testkit.Unavailable(t, "Docker: %v", err)
	}
	t.Cleanup(func() { cli.Close() }) // after the cleanups below, which use it
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	const key = "sandboxes-test-key-0123456789"
	type gw struct {
		state, instance string
		cmd             *exec.Cmd
		base            string
	}
	serve := func(name string, uidBase int, extra ...string) *gw {
		g := &gw{state: filepath.Join(t.TempDir(), name), instance: name + "-" + suffix}
		os.MkdirAll(g.state, 0o711)
		g.cmd, g.base = startBinary(t, append([]string{"--runtime", "docker", "--instance", g.instance, "--state-dir", g.state,
			"--uid-base", strconv.Itoa(uidBase), "--api-key", key, "--log-level", "warn", "--pool", "0"}, extra...)...)
		return g
	}
	type session struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
		EndAt     time.Time `json:"end_at"`
	}
	create := func(g *gw, body map[string]any) (session, string) {
		var s session
		if st := api(t, g.base, key, "POST", "/v1/sessions", body, &s); st != http.StatusCreated {
			t.Fatalf("create: %d", st)
		}
		name := "glassroom-" + g.instance + "-" + s.ID
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
		})
		return s, name
	}
	gone := serve("gone", 364000)
	short, shortName := create(gone, map[string]any{"lifetime_s": 20})
	_, longName := create(gone, nil)
	live := serve("live", 365024, "--on-shutdown", "stop")
	_, liveName := create(live, nil)

	gone.cmd.Process.Signal(syscall.SIGTERM) // --on-shutdown keep: for a next gateway that never comes
	if err := gone.cmd.Wait(); err != nil {
		t.Fatalf("the first gateway's shutdown: %v", err)
	}
	t.Cleanup(func() { // what its sandboxes leave (tmpfs mounts), if the test fails before --remove
		ids, _ := sandbox.SessionDirs(gone.state)
		for _, id := range ids {
			_ = sandbox.RemoveDir(filepath.Join(gone.state, id))
		}
	})
	for _, name := range []string{shortName, longName} {
		if info, err := cli.ContainerInspect(context.Background(), name); err != nil || !info.State.Running {
			t.Fatalf("the kept container %s should run on after its gateway's SIGTERM: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitC, errC := cli.ContainerWait(ctx, shortName, container.WaitConditionNotRunning)
	select {
	case res := <-waitC:
		if res.StatusCode != docker.DeadlineExit || time.Now().Before(short.EndAt) {
			t.Fatalf("the kept container of a session ending at %v ended at %v with exit code %d, want %d at its end, not before",
				short.EndAt, time.Now(), res.StatusCode, docker.DeadlineExit)
		}
	case err := <-errC:
		t.Fatalf("waiting (3 min) for the kept container %s to end itself at its session's end %v: %v", shortName, short.EndAt, err)
	}

	sandboxes := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(gatewayBinary(t), append([]string{"sandboxes", "--state-dir", gone.state, "--state-dir", live.state}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("glassroom sandboxes %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	lineOf := func(out, name string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, name+" ") {
				return l
			}
		}
		t.Fatalf("%s not listed:\n%s", name, out)
		return ""
	}
	out := sandboxes()
	if l := lineOf(out, shortName); !strings.Contains(l, "exited") || !strings.Contains(l, "none: its state dir's lock is free") || !strings.Contains(l, "passed") {
		t.Errorf("the container that ended itself: %q", l)
	}
	if l := lineOf(out, longName); !strings.Contains(l, "running") || !strings.Contains(l, "none: ") || !strings.Contains(l, " in ") {
		t.Errorf("the unowned running container: %q", l)
	}
	if l := lineOf(out, liveName); !strings.Contains(l, "running") || !strings.Contains(l, "gateway (pid "+strconv.Itoa(live.cmd.Process.Pid)+")") {
		t.Errorf("the live gateway's container: %q", l)
	}

	out = sandboxes("--remove")
	if !strings.Contains(out, "removed 2 sandboxes") {
		t.Errorf("--remove:\n%s", out)
	}
	for name, want := range map[string]bool{shortName: false, longName: false, liveName: true} {
		info, err := cli.ContainerInspect(context.Background(), name)
		switch {
		case want && (err != nil || !info.State.Running):
			t.Errorf("the live gateway's container %s: %v", name, err)
		case !want && !cerrdefs.IsNotFound(err):
			t.Errorf("the unowned container %s is left: %v", name, err)
		}
	}
	for _, name := range sessionDirs(gone.state) {
		t.Errorf("a session directory of the gone gateway is left: %s", name)
	}
	var s session
	if st := api(t, live.base, key, "POST", "/v1/sessions", nil, &s); st != http.StatusCreated {
		t.Fatalf("the live gateway after --remove: create %d", st)
	}
}
