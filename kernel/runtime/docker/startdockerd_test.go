package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// throwawayEngine starts a second Docker engine, next to the machine's, in
// a temporary directory, with daemon.json's content; it is stopped and
// removed when the test ends. It returns the directory and DOCKER_HOST.
func throwawayEngine(t *testing.T, daemonJSON string) (dir, host string) {
	t.Helper()
	_, errD := exec.LookPath("dockerd")
	if os.Geteuid() != 0 || errD != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a throwaway Docker engine needs root and dockerd in CI (uid %d, %v)", os.Geteuid(), errD)
		}
		t.Skipf("\n\n*** SKIPPING: a throwaway Docker engine needs root and dockerd (uid %d, %v) ***\n\n", os.Geteuid(), errD)
	}
	dir, err := os.MkdirTemp("/tmp", "gr-gvisor-engine-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte(daemonJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "docker.sock")
	cmd := exec.Command("dockerd", "-H", "unix://"+sock, "--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "--bridge", "none", "--iptables=false", "--ip6tables=false",
		"--storage-driver", "overlay2", "--config-file", filepath.Join(dir, "daemon.json"))
	log, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("dockerd: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		exec.Command("umount", "-R", "-l", filepath.Join(dir, "exec")).Run()
		exec.Command("umount", "-R", "-l", filepath.Join(dir, "data")).Run()
		os.RemoveAll(dir)
	})
	host = "unix://" + sock
	for {
		if exec.Command("docker", "-H", host, "info").Run() == nil {
			return dir, host
		}
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			t.Fatalf("the throwaway engine exited: %s", b)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestStartDockerdMakesRunscEnforceSeccomp: an engine whose runsc entry
// lacks --oci-seccomp (an old daemon.json) is refused by the runtime;
// scripts/start-dockerd.sh adds the flag to the running engine's config,
// keeping the rest, reloads the engine (the same process) and the runtime
// then accepts it; run again, the script changes nothing.
func TestStartDockerdMakesRunscEnforceSeccomp(t *testing.T) {
	runsc, err := exec.LookPath("runsc")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("runsc is missing in CI (scripts/install-deps.sh test installs it)")
		}
		t.Skip("runsc is not installed")
	}
	old := `{"live-restore": true, "runtimes": {"runsc": {"path": "` + runsc + `", "runtimeArgs": ["--network=none", "--host-uds=all"]}}}`
	dir, host := throwawayEngine(t, old)
	t.Setenv("DOCKER_HOST", host)
	// A tiny image stands for the kernel's: New only checks that it exists.
	imp := exec.Command("docker", "import", "-", "glassroom/gvisor-check:test")
	imp.Stdin = emptyTar()
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v %s", err, out)
	}
	newRunsc := func() error {
		state := t.TempDir()
		os.Chmod(state, 0o711)
		r, err := docker.New(context.Background(), docker.Config{OCIRuntime: "runsc", Image: "glassroom/gvisor-check:test",
			Instance: "gvisor-check", Adopting: true, Common: sandbox.Common{StateDir: state, UIDBase: testkit.UIDBase(t)}}, zerolog.Nop())
		if err == nil {
			r.Close()
		}
		return err
	}
	if err := newRunsc(); !errors.Is(err, docker.ErrSeccompNotEnforced) {
		t.Fatalf("a runsc without --oci-seccomp: want ErrSeccompNotEnforced, got %v", err)
	}
	pid, _ := os.ReadFile(filepath.Join(dir, "docker.pid"))

	script, _ := filepath.Abs("../../../scripts/start-dockerd.sh")
	run := func() string {
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+host, "DOCKERD_CONFIG="+filepath.Join(dir, "daemon.json"),
			"DOCKERD_PIDFILE="+filepath.Join(dir, "docker.pid"), "DOCKERD_LOG="+filepath.Join(dir, "dockerd.log"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("start-dockerd.sh: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run()
	if !strings.Contains(out, "reloading dockerd") {
		t.Errorf("no reload:\n%s", out)
	}
	if err := newRunsc(); err != nil {
		t.Fatalf("after start-dockerd.sh: %v\n%s", err, out)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "daemon.json"))
	for _, want := range []string{`"live-restore": true`, `"--network=none"`, `"--host-uds=all"`, `"--oci-seccomp"`} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("daemon.json lost or lacks %s:\n%s", want, cfg)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "docker.pid")); !bytes.Equal(now, pid) {
		t.Errorf("the engine was restarted (pid %s, now %s), not reloaded", pid, now)
	}

	again := run()
	if strings.Contains(again, "reloading") || strings.Contains(again, "registered") {
		t.Errorf("the second run changed something:\n%s", again)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "daemon.json")); !bytes.Equal(now, cfg) {
		t.Errorf("the second run rewrote daemon.json:\n%s\nwas\n%s", now, cfg)
	}
}

// emptyTar is a tar archive of one empty file.
func emptyTar() *bytes.Buffer {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "empty", Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Close()
	return &b
}
