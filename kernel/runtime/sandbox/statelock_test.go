package sandbox

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// holdLock has another process (util-linux flock) take dir's lock and
// keep it until the returned function ends it.
func holdLock(t *testing.T, dir string) (pid int, end func()) {
	t.Helper()
	cmd := exec.Command("flock", "--exclusive", "--nonblock", dir, "sh", "-c", "echo locked && exec cat")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatalf("flock: %v", err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("flock did not take the lock: %q %v", line, err)
	}
	done := false
	end = func() {
		if !done {
			done = true
			stdin.Close()
			cmd.Wait()
		}
	}
	t.Cleanup(end)
	return cmd.Process.Pid, end
}

// TestStateLockIsExclusive: one holder at a time; a second LockStateDir
// fails at once with a StateDirInUseError naming the directory (and the
// holder's pid); Release lets the next one in.
func TestStateLockIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o711 {
		t.Fatalf("state dir not created 0711: %v %v", st, err)
	}
	_, err = LockStateDir(dir)
	var inUse *StateDirInUseError
	if !errors.As(err, &inUse) || inUse.Dir != dir || inUse.PID != os.Getpid() || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want a StateDirInUseError for %s held by pid %d", err, dir, os.Getpid())
	}
	l.Release()
	l.Release() // idempotent
	l2, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Release()
}

// TestStateLockHeldByAnotherProcess: a lock another process holds is
// refused, naming that process; once it dies the directory is free (the
// kernel releases a dead gateway's lock).
func TestStateLockHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	pid, end := holdLock(t, dir)
	_, err := LockStateDir(dir)
	var inUse *StateDirInUseError
	if !errors.As(err, &inUse) || inUse.PID != pid {
		t.Fatalf("lock held by pid %d: %v", pid, err)
	}
	end()
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after its holder died: %v", err)
	}
	l.Release()
}

// TestStateLockNotInherited: a child process (a kernel) does not inherit
// the lock, so it cannot keep it after its gateway released it or died.
func TestStateLockNotInherited(t *testing.T) {
	dir := t.TempDir()
	l, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sh", "-c", "exec cat")
	stdin, _ := child.StdinPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); child.Wait() }()
	l.Release()
	l2, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("a child process kept the released lock: %v", err)
	}
	l2.Release()
}
