package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// TestSIGKILLedGatewayOrphansAreRemoved runs the real binary with the
// Docker runtime, kills it with SIGKILL while a session is live, and checks
// that the next start removes the orphaned container.
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
	bin := filepath.Join(t.TempDir(), "glassroom")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	state := t.TempDir()
	os.Chmod(state, 0o711)
	instance := "orphan-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	const key = "orphan-test-key-0123456789"
	serve := func() (*exec.Cmd, string) {
		cmd := exec.Command(bin, "serve", "--runtime", "docker", "--listen", "127.0.0.1:0", "--instance", instance,
			"--state-dir", state, "--api-key", key, "--log-level", "warn")
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := urlRe.FindStringSubmatch(sc.Text()); m != nil {
				go io.Copy(io.Discard, stdout)
				return cmd, m[1]
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("gateway printed no URL")
		return nil, ""
	}
	first, base := serve()
	req, _ := http.NewRequest("POST", base+"/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
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
	if _, err := cli.ContainerInspect(ctx, name); !client.IsErrNotFound(err) {
		t.Fatalf("orphan %s not removed at startup: %v", name, err)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("orphaned session dirs left: %s", strings.Join(names, ","))
	}
}
