package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
)

// The real binary, built once per test run (without -race, so memory
// figures are the gateway's own).
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func gatewayBinary(t *testing.T) string {
	t.Helper()
	testkit.RealThing(t, "the gateway binary and real kernels")
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "glassroom-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "glassroom")
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = "/usr/local/go/bin/go"
		}
		out, err := exec.Command(goTool, "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = err
			t.Logf("go build: %s", out)
		}
	})
	if binErr != nil {
		t.Fatalf("build the gateway: %v", binErr)
	}
	return binPath
}

// startBinary runs `glassroom serve args...` and returns the process and
// its base URL once it prints it. The process is killed when the test
// ends unless the test waited for it.
func startBinary(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return startBinaryEnv(t, nil, args...)
}

// startBinaryEnv is startBinary with env added to the test's environment.
func startBinaryEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(gatewayBinary(t), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return cmd, startCommand(t, cmd)
}

// startCommand starts cmd, a gateway (or what execs one: the process must
// be the gateway itself, for the signals), and returns its base URL once
// it prints it. The process is stopped when the test ends unless the test
// waited for it.
func startCommand(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test waited for it
		}
		// Gracefully, so the gateway removes its sandboxes and mounts.
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := urlRe.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stdout)
			return m[1]
		}
	}
	t.Fatal("gateway printed no URL")
	return ""
}

// api does one JSON request and decodes the answer into out (if non-nil).
func api(t *testing.T, base, key, method, path string, body, out any) int {
	t.Helper()
	st, err := apiCall(base, key, method, path, body, out)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return st
}

// apiCall is api without the test (for goroutines, which must not end
// it): one JSON request, its status, and the answer decoded into out (if
// non-nil).
func apiCall(base, key, method, path string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	// An error's body is decoded too (callers read its code); one that is
	// not JSON (a proxy's) is no failure of the call.
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil && resp.StatusCode < 300 {
			return resp.StatusCode, fmt.Errorf("decode %.200q: %w", data, err)
		}
	}
	return resp.StatusCode, nil
}

// procStatus returns a field of /proc/<pid>/status in KiB.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb
				}
			}
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// requireDocker fails in CI, and skips loudly elsewhere, without a Docker
// engine and the kernel image.
func requireDocker(t *testing.T) {
	t.Helper()
	testkit.RealThing(t, "Docker")
	out, err := exec.Command("docker", "image", "inspect", "-f", "ok", "glassroom/python-kernel:latest").CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Docker or the kernel image unavailable in CI: %v %s", err, out)
	}
	t.Skipf("\n\n*** SKIPPING: Docker or the kernel image unavailable: %v ***\n\n", err)
}
