package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/testkit"
)

// TestSIGKILLedGatewayOrphansAreRemoved runs the real binary with the
// Docker runtime, kills it with SIGKILL while a session is live, and checks
// that the next start removes the orphaned container. The first gateway
// keeps no session store, so the container is an orphan nobody can adopt;
// the second, durable by default, adopts what its store names and removes
// the rest.
func TestSIGKILLedGatewayOrphansAreRemoved(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker unavailable in CI: %v", err)
		}
		t.Skipf("\n\n*** SKIPPING: Docker unavailable: %v ***\n\n", err)
	}
	defer cli.Close()
	state := t.TempDir()
	os.Chmod(state, 0o711)
	instance := "orphan-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	const key = "orphan-test-key-0123456789"
	uidBase := strconv.Itoa(testkit.UIDBase(t)) // the same for both gateways
	serve := func(extra ...string) (*exec.Cmd, string) {
		return startBinary(t, append([]string{"--runtime", "docker", "--instance", instance, "--state-dir", state, "--uid-base", uidBase, "--api-key", key, "--log-level", "warn"}, extra...)...)
	}
	first, base := serve("--durable=false")
	var s struct{ ID string }
	if st := api(t, base, key, "POST", "/v1/sessions", nil, &s); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	name := "glassroom-" + instance + "-" + s.ID
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	ctx := context.Background()
	if info, err := cli.ContainerInspect(ctx, name); err != nil || !info.State.Running {
		t.Fatalf("the killed gateway's container should still be running (orphan): %v", err)
	}
	second, _ := serve()
	defer func() {
		second.Process.Signal(syscall.SIGTERM)
		second.Wait()
	}()
	if _, err := cli.ContainerInspect(ctx, name); !cerrdefs.IsNotFound(err) {
		t.Fatalf("orphan %s not removed at startup: %v", name, err)
	}
	if left := sessionDirs(state); len(left) != 0 {
		t.Fatalf("orphaned session dirs left: %s", strings.Join(left, ","))
	}
}
