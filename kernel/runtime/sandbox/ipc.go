package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// ConnectionFileName is the name of the connection file in the ipc directory.
const ConnectionFileName = "kernel.json"

// PrepareIPC readies hostDir, the host side of the sandbox's ipc directory,
// for a new kernel: it removes stale sockets, writes a connection file with
// a fresh key whose socket paths are under sandboxDir (the same directory as
// the sandbox sees it; "" when the kernel sees host paths), and gives the
// file to uid:gid. It returns the gateway-side connection info.
func PrepareIPC(hostDir, sandboxDir string, uid, gid int) (kernel.ConnectionInfo, error) {
	inside := kernel.NewIPCConnection(filepath.Join(hostDir, "k"))
	host := inside
	if sandboxDir != "" {
		inside.IP = sandboxDir + "/k"
	}
	for _, ch := range kernel.Channels {
		_ = os.Remove(host.SocketPath(ch))
	}
	file := filepath.Join(hostDir, ConnectionFileName)
	_ = os.Remove(file)
	body, err := json.MarshalIndent(inside, "", "  ")
	if err != nil {
		return kernel.ConnectionInfo{}, fmt.Errorf("sandbox: connection file: %w", err)
	}
	// O_EXCL|O_NOFOLLOW and fchown: the directory is the sandbox's, so
	// nothing planted there may redirect the write or the chown.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return kernel.ConnectionInfo{}, fmt.Errorf("sandbox: connection file: %w", err)
	}
	_, err = f.Write(body)
	if err == nil {
		err = f.Chown(uid, gid)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return kernel.ConnectionInfo{}, fmt.Errorf("sandbox: connection file: %w", err)
	}
	return host, nil
}

// WaitForSockets polls until the five sockets of info exist as plain
// sockets. It fails when exited closes first (the kernel died during
// start) or ctx ends.
func WaitForSockets(ctx context.Context, info kernel.ConnectionInfo, exited <-chan struct{}) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ready := true
		for _, ch := range kernel.Channels {
			if kernel.CheckSocket(info.SocketPath(ch)) != nil {
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
			return fmt.Errorf("%w: kernel did not start: %w", ErrUnavailable, ctx.Err())
		case <-tick.C:
		}
	}
}
