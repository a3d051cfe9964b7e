package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// StateLock is a runtime's exclusive hold on its state directory: one
// gateway per directory, so no gateway removes as orphans the session
// directories (and, for docker, the containers) of another that is alive.
//
// It is an flock(2) on the directory itself, taken without waiting. The
// kernel releases it when the holder's process dies, however it dies, so
// the next gateway on the directory can take over and reconcile what the
// dead one left; the descriptor is close-on-exec, so no kernel process
// inherits it and keeps a dead gateway's lock alive. flock locks the
// directory's inode: every path to it (a symlink, a bind mount into a
// gateway's container) shares the one lock.
type StateLock struct {
	dir  string
	once sync.Once
	fd   int
}

// StateDirInUseError is returned by LockStateDir when another gateway (a
// live process) holds the directory.
type StateDirInUseError struct {
	Dir string
	// PID is the holder's process id as this process's /proc sees it, or 0
	// when unknown (another pid namespace).
	PID int
}

func (e *StateDirInUseError) Error() string {
	holder := "another gateway"
	if e.PID > 0 {
		holder += " (pid " + strconv.Itoa(e.PID) + ")"
	}
	return "sandbox: state dir " + e.Dir + " is in use by " + holder
}

// LockStateDir creates the state directory (see prepareStateDir) and
// locks it. It fails with a *StateDirInUseError, at once, if a live
// process holds it. The caller must Release the lock, once nothing of
// its own is left in the directory (or never: it ends with the process).
func LockStateDir(dir string) (*StateLock, error) {
	if err := prepareStateDir(dir); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: lock state dir: %w", err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		inUse := errors.Is(err, unix.EWOULDBLOCK)
		pid := 0
		if inUse {
			pid = lockHolder(fd)
		}
		_ = unix.Close(fd)
		if inUse {
			return nil, &StateDirInUseError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("sandbox: lock state dir %s: %w", dir, err)
	}
	return &StateLock{dir: dir, fd: fd}, nil
}

// Dir returns the locked directory.
func (l *StateLock) Dir() string { return l.dir }

// Release gives the directory up. Later calls do nothing; it is safe for
// concurrent use.
func (l *StateLock) Release() {
	l.once.Do(func() { _ = unix.Close(l.fd) })
}

// lockHolder finds, best effort, the process holding an flock on fd's
// file in /proc/locks ("1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF").
func lockHolder(fd int) int {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == file {
			if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
				return pid
			}
		}
	}
	return 0
}
