package kernel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
	"golang.org/x/sys/unix"
)

// Every socket the Client opens uses a guarded transport, one per channel
// and network ("glassroom-ipc-iopub", "glassroom-tcp-shell", ...), instead
// of zmq4's plain "ipc" and "tcp": it refuses symlinked unix sockets and
// puts a guardConn with the channel's ceilings under zmq4.
const transportPrefix = "glassroom-"

func transportName(network string, ch Channel) string {
	if network == "unix" {
		network = "ipc"
	}
	return transportPrefix + network + "-" + string(ch)
}

// ErrSymlink is returned when a kernel socket path is not a plain socket,
// for example a symlink planted by sandboxed code.
var ErrSymlink = errors.New("kernel: socket path is not a plain unix socket (symlink or other file refused)")

// The guarded transports are stateless values; zmq4's transport registry is
// process-wide, so they are registered once, at package initialisation, as
// zmq4 registers its own.
func init() {
	for _, network := range []string{"unix", "tcp"} {
		for _, ch := range Channels {
			if err := zmq4.RegisterTransport(transportName(network, ch), guardedTransport{network: network, lim: limitsFor(ch)}); err != nil {
				panic(fmt.Sprintf("kernel: register transport: %v", err))
			}
		}
	}
}

type guardedTransport struct {
	network string
	lim     frameLimits
}

// Dial opens the connection. For unix sockets it opens the final path
// component with O_PATH|O_NOFOLLOW, checks that it is a socket, and
// connects through /proc/self/fd, so a symlink swapped in after the check
// cannot redirect the connection (no check-then-use race).
func (t guardedTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	if t.network == "tcp" {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return newGuardConn(c, t.lim), nil
	}
	fd, err := OpenSocketNoFollow(addr)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("kernel: dial %s: %w", addr, err)
	}
	return newGuardConn(c, t.lim), nil
}

// OpenSocketNoFollow opens path with O_PATH|O_NOFOLLOW and returns the
// descriptor if, and only if, it is a unix socket. The caller closes it.
func OpenSocketNoFollow(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("kernel: open socket %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("kernel: stat socket %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s", ErrSymlink, path)
	}
	return fd, nil
}

// CheckSocket reports whether path is a unix socket and not a symlink.
func CheckSocket(path string) error {
	fd, err := OpenSocketNoFollow(path)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func (guardedTransport) Listen(context.Context, string) (net.Listener, error) {
	return nil, errors.New("kernel: guarded transports only dial")
}

func (t guardedTransport) Addr(ep string) (string, error) { return ep, nil }
