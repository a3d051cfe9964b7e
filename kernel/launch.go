package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// This file holds what every runtime needs to launch a kernel: limit
// arithmetic, the ipc connection file, the wait for the kernel's sockets,
// and Incarnation, one run of a kernel process.

// Or returns l with every zero field taken from def.
func (l Limits) Or(def Limits) Limits {
	if l.MemoryMB == 0 {
		l.MemoryMB = def.MemoryMB
	}
	if l.CPUs == 0 {
		l.CPUs = def.CPUs
	}
	if l.Pids == 0 {
		l.Pids = def.Pids
	}
	if l.WorkspaceMB == 0 {
		l.WorkspaceMB = def.WorkspaceMB
	}
	return l
}

// Cap returns l with every field lowered to at most max's.
func (l Limits) Cap(max Limits) Limits {
	l.MemoryMB = min(l.MemoryMB, max.MemoryMB)
	l.CPUs = min(l.CPUs, max.CPUs)
	l.Pids = min(l.Pids, max.Pids)
	l.WorkspaceMB = min(l.WorkspaceMB, max.WorkspaceMB)
	return l
}

// Exceeds reports whether any field of l is larger than max's.
func (l Limits) Exceeds(max Limits) bool {
	return l.MemoryMB > max.MemoryMB || l.CPUs > max.CPUs || l.Pids > max.Pids || l.WorkspaceMB > max.WorkspaceMB
}

// ConnectionFileName is the name of the connection file in the ipc directory.
// ipykernel rewrites the file at start, so it lives in the sandbox-writable
// ipc directory and the gateway never reads it back.
const ConnectionFileName = "kernel.json"

// PrepareIPC readies hostDir, the host side of the sandbox's ipc directory,
// for a new kernel: it removes stale sockets, writes a connection file with
// a fresh key whose socket paths are under sandboxDir (the same directory as
// the sandbox sees it; "" when the kernel sees host paths), and gives the
// file to uid:gid. It returns the gateway-side connection info.
func PrepareIPC(hostDir, sandboxDir string, uid, gid int) (ConnectionInfo, error) {
	inside := NewIPCConnection(filepath.Join(hostDir, "k"))
	host := inside
	if sandboxDir != "" {
		inside.IP = sandboxDir + "/k"
	}
	for _, ch := range Channels {
		_ = os.Remove(host.SocketPath(ch))
	}
	file := filepath.Join(hostDir, ConnectionFileName)
	_ = os.Remove(file)
	body, err := json.MarshalIndent(inside, "", "  ")
	if err != nil {
		return ConnectionInfo{}, fmt.Errorf("kernel: connection file: %w", err)
	}
	// O_EXCL|O_NOFOLLOW and fchown: the directory is the sandbox's, so
	// nothing planted there may redirect the write or the chown.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return ConnectionInfo{}, fmt.Errorf("kernel: connection file: %w", err)
	}
	_, err = f.Write(body)
	if err == nil {
		err = f.Chown(uid, gid)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ConnectionInfo{}, fmt.Errorf("kernel: connection file: %w", err)
	}
	return host, nil
}

// WaitForSockets polls until the five sockets of info exist as plain
// sockets. It fails when exited closes first (the kernel died during
// start) or ctx ends.
func WaitForSockets(ctx context.Context, info ConnectionInfo, exited <-chan struct{}) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ready := true
		for _, ch := range Channels {
			if CheckSocket(info.SocketPath(ch)) != nil {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%w: kernel exited during start", ErrUnavailable)
		case <-ctx.Done():
			return fmt.Errorf("%w: kernel did not start: %v", ErrUnavailable, ctx.Err())
		case <-tick.C:
		}
	}
}

// Incarnation is one run of a sandboxed kernel process: how to reach it and
// how it ended. The runtime calls Exit exactly once, when the process is
// gone; the other methods are safe for concurrent use.
type Incarnation struct {
	info     ConnectionInfo
	exited   chan struct{}
	exitOnce sync.Once
	reason   string
}

// NewIncarnation returns a running incarnation reachable through info.
func NewIncarnation(info ConnectionInfo) *Incarnation {
	return &Incarnation{info: info, exited: make(chan struct{})}
}

// Connection returns how the gateway reaches this kernel process.
func (i *Incarnation) Connection() ConnectionInfo { return i.info }

// Exited is closed when the process has exited.
func (i *Incarnation) Exited() <-chan struct{} { return i.exited }

// Exit records why the process ended and closes Exited.
func (i *Incarnation) Exit(reason string) {
	i.exitOnce.Do(func() {
		i.reason = reason
		close(i.exited)
	})
}

// ExitReason returns the reason given to Exit, or "" while it runs.
func (i *Incarnation) ExitReason() string {
	select {
	case <-i.exited:
		return i.reason
	default:
		return ""
	}
}
