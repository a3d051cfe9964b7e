package testkit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Python returns Debian's /usr/bin/python3 after checking that it imports
// modules (e.g. "websocket"); a missing one is Unavailable.
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	RealThing(t, "Debian's python3")
	const py = "/usr/bin/python3"
	for _, m := range modules {
		if out, err := exec.Command(py, "-c", "import "+m).CombinedOutput(); err != nil {
			Unavailable(t, "%s cannot import %s (make test-deps): %v %s", py, m, err, out)
		}
	}
	return py
}

// NPMInstall runs `npm ci` in dir (a package.json + package-lock.json)
// unless node_modules already matches the lock file, and returns the path
// of node. A file lock keeps parallel test packages from installing at
// once. After the first install it works offline.
func NPMInstall(t testing.TB, dir string) string {
	t.Helper()
	RealThing(t, "node and npm")
	node, err := exec.LookPath("node")
	if err != nil {
		Unavailable(t, "node is not installed (make test-deps)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		Unavailable(t, "npm is not installed (make test-deps)")
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	lf, err := os.OpenFile(filepath.Join(dir, ".npm-install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	stamp := filepath.Join(dir, "node_modules", ".glassroom-lock-sha256")
	if got, _ := os.ReadFile(stamp); string(got) == want {
		return node
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		Unavailable(t, "npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	return node
}

// RunNode runs `node script args...` in dir (a package NPMInstall has
// installed), decodes the JSON it prints into out and returns what it
// wrote to stderr, for the caller's failure messages. Node is killed
// after four minutes; a failed run or undecodable output fails t.
func RunNode(t testing.TB, dir, script string, out any, args ...string) (stderr string) {
	t.Helper()
	node := NPMInstall(t, dir)
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	timer := time.AfterFunc(4*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s in %s: %v\nstdout: %s\nstderr: %s", script, dir, err, stdout, errb.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node %s output %q: %v\nstderr: %s", script, stdout, err, errb.String())
	}
	return errb.String()
}
