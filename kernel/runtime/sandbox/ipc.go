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
// for a new kernel: it empties it (stale sockets, and whatever the previous
// kernel's code left there: a restart starts clean), writes a connection file with
// a fresh key whose socket paths are under sandboxDir (the same directory as
// the sandbox sees it; "" when the kernel sees host paths), and gives the
// file to uid:gid. It returns the gateway-side connection info.
func PrepareIPC(hostDir, sandboxDir string, uid, gid int) (kernel.ConnectionInfo, error) {
	inside := kernel.NewIPCConnection(filepath.Join(hostDir, "k"))
	host := inside
	if sandboxDir != "" {
		inside.IP = sandboxDir + "/k"
	}
	if err := emptyDir(hostDir); err != nil {
		return kernel.ConnectionInfo{}, err
	}
	file := filepath.Join(hostDir, ConnectionFileName)
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

// emptyDir removes everything in dir (not dir itself). os.RemoveAll
// removes a symlink, never what it points to, and works relative to
// directory descriptors, so nothing the sandbox planted redirects it.
func emptyDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sandbox: ipc directory: %w", err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("sandbox: ipc directory: %w", err)
	}
	for _, n := range names {
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("sandbox: empty ipc directory: %w", err)
		}
	}
	return nil
}
