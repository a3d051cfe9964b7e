package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// sharedNetns holds the network namespace of a sandbox's first kernel
// (bwrap's --unshare-net made it), so that the sandbox's commands and
// preview relays join it rather than each having a loopback of its own:
// a server that a command or a cell starts is then reached by the next
// command and by a preview, as in a container. Only a root gateway can
// join one (setns needs CAP_SYS_ADMIN); without it, or when the
// namespace cannot be held, commands keep a namespace of their own. Safe
// for concurrent use; the zero value holds none.
type sharedNetns struct {
	mu sync.Mutex
	f  *os.File
}

// hold makes the namespace of the process pid (a kernel's sandbox init,
// whose pidfd is pidfd, running as uid) the shared one, replacing (and closing) the one
// before: a restarted kernel has a new namespace. It holds none when the
// namespace cannot be opened safely.
func (n *sharedNetns) hold(pid, pidfd, uid int) error {
	f, err := openNetns(pid, pidfd, uid)
	n.mu.Lock()
	old := n.f
	n.f = f
	n.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return err
}

// dup returns a descriptor of the shared namespace for one start (the
// caller closes it), or nil when there is none.
func (n *sharedNetns) dup() *os.File {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.f == nil {
		return nil
	}
	fd, err := unix.FcntlInt(n.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), n.f.Name())
}

// close lets the namespace go. Idempotent.
func (n *sharedNetns) close() {
	n.mu.Lock()
	f := n.f
	n.f = nil
	n.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// openNetns opens the network namespace of pid, checking through pidfd
// that pid was still that process once it was opened and that it runs as
// uid (a pid reused by another process must not lend its namespace), and
// that it is not the gateway's own (the host's network).
func openNetns(pid, pidfd, uid int) (*os.File, error) {
	if pid <= 0 || pidfd < 0 {
		return nil, errors.New("local: network namespace: no sandbox process")
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("local: network namespace: %w", err)
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("local: network namespace: the sandbox's process is gone: %w", err)
	}
	// The pid is this sandbox's process, not one that took its number
	// before the pidfd was opened: it runs as the sandbox's uid.
	var proc unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid), &proc); err != nil || int(proc.Uid) != uid {
		f.Close()
		return nil, errors.New("local: network namespace: the process is not the sandbox's")
	}
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &theirs); err != nil {
		f.Close()
		return nil, fmt.Errorf("local: network namespace: %w", err)
	}
	if err := unix.Stat("/proc/self/ns/net", &ours); err != nil || theirs.Dev == ours.Dev && theirs.Ino == ours.Ino {
		f.Close()
		return nil, errors.New("local: network namespace: the sandbox's is the gateway's own")
	}
	return f, nil
}

// startInNetns starts cmd inside the network namespace ns (nil: where
// the gateway is). The fork happens on a thread that enters ns and then
// returns to the gateway's own namespace before the scheduler may run
// anything else on it. The thread must live on: the child's parent-death
// signal follows the thread that forked it, so a thread that cannot come
// back fails the start (the child is killed as the thread ends).
func startInNetns(ns *os.File, cmd *exec.Cmd) error {
	if ns == nil {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() { // owned by startInNetns, which waits for its one result
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("local: the gateway's network namespace: %w", err)
			return
		}
		defer home.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("local: join the sandbox's network namespace: %w", err)
			return
		}
		err = cmd.Start()
		if back := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); back != nil {
			// Locked for good: the thread ends with this goroutine, and
			// with it the child (its parent-death signal).
			if err == nil {
				err = fmt.Errorf("local: return to the gateway's network namespace: %w", back)
			}
			errc <- err
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}
