package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
	"golang.org/x/sys/unix"
)

// Names of the guarded zmq4 transports this package registers. Every socket
// the Client opens uses one of them instead of zmq4's plain "ipc" and "tcp".
const (
	guardedIPC = "glassroom-ipc"
	guardedTCP = "glassroom-tcp"
)

// Hard ceilings enforced below zmq4, on the raw byte stream, before zmq4
// allocates a frame. zmq4 would otherwise allocate whatever size a peer
// declares (up to 2^63 bytes). Client.Config bounds messages further.
const (
	// MaxFrameBytes bounds one ZMTP frame from a kernel.
	MaxFrameBytes = 16 << 20
	// MaxMessageBytes bounds one multipart message from a kernel, counting
	// frameOverhead per frame for what zmq4 keeps for each.
	MaxMessageBytes = 24 << 20
	// MaxFramesPerMessage bounds the frames of one message: Jupyter
	// messages have a few identities, six frames and their buffers. Without
	// it, endless empty frames (2 bytes each on the wire) grow zmq4's frame
	// slice without bound.
	MaxFramesPerMessage = 1024
	frameOverhead       = 64
)

// ErrSymlink is returned when a kernel socket path is not a plain socket,
// for example a symlink planted by sandboxed code.
var ErrSymlink = errors.New("kernel: socket path is not a plain unix socket (symlink or other file refused)")

// ErrFrameTooLarge is returned when a kernel sends a frame or message over
// the hard ceilings. The connection is closed.
var ErrFrameTooLarge = errors.New("kernel: frame from kernel exceeds size limit")

// The guarded transports are stateless values; registering them once at
// package initialisation mirrors how zmq4 registers its own.
func init() {
	for name, tr := range map[string]transport.Transport{
		guardedIPC: guardedTransport{network: "unix"},
		guardedTCP: guardedTransport{network: "tcp"},
	} {
		if err := zmq4.RegisterTransport(name, tr); err != nil {
			panic(fmt.Sprintf("kernel: register transport %s: %v", name, err))
		}
	}
}

type guardedTransport struct{ network string }

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
		return newGuardConn(c), nil
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
	return newGuardConn(c), nil
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

// guardConn parses the ZMTP 3 framing of the bytes it reads and fails the
// read that would hand zmq4 a frame header over the limits.
type guardConn struct {
	net.Conn
	maxFrame, maxMsg uint64

	greetLeft int    // bytes of the 64-byte greeting still to pass
	state     int    // stFlags, stSize or stBody
	flags     byte   // flags of the current frame
	size      []byte // size bytes gathered so far
	sizeNeed  int    // 1 or 8
	bodyLeft  uint64 // body bytes of the current frame still to pass
	msgBytes  uint64 // bytes of the current multipart message so far
	msgFrames int    // frames of the current multipart message so far
}

const (
	stFlags = iota
	stSize
	stBody
)

const (
	flagMore = 0x01
	flagLong = 0x02
)

func newGuardConn(c net.Conn) *guardConn {
	return &guardConn{Conn: c, maxFrame: MaxFrameBytes, maxMsg: MaxMessageBytes, greetLeft: 64, size: make([]byte, 0, 8)}
}

func (g *guardConn) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if n > 0 {
		if verr := g.scan(p[:n]); verr != nil {
			g.Conn.Close()
			return 0, verr
		}
	}
	return n, err
}

// scan advances the framing state over b and reports a limit violation.
func (g *guardConn) scan(b []byte) error {
	for len(b) > 0 {
		if g.greetLeft > 0 {
			k := min(g.greetLeft, len(b))
			g.greetLeft -= k
			b = b[k:]
			continue
		}
		switch g.state {
		case stFlags:
			g.flags = b[0]
			b = b[1:]
			g.sizeNeed = 1
			if g.flags&flagLong != 0 {
				g.sizeNeed = 8
			}
			g.size = g.size[:0]
			g.state = stSize
		case stSize:
			k := min(g.sizeNeed-len(g.size), len(b))
			g.size = append(g.size, b[:k]...)
			b = b[k:]
			if len(g.size) < g.sizeNeed {
				continue
			}
			var sz uint64
			if g.sizeNeed == 1 {
				sz = uint64(g.size[0])
			} else {
				sz = binary.BigEndian.Uint64(g.size)
			}
			g.msgFrames++
			if sz > g.maxFrame || g.msgBytes+sz+frameOverhead > g.maxMsg || g.msgFrames > MaxFramesPerMessage {
				return fmt.Errorf("%w: frame %d of %d bytes", ErrFrameTooLarge, g.msgFrames, sz)
			}
			g.msgBytes += sz + frameOverhead
			g.bodyLeft = sz
			g.state = stBody
			if sz == 0 {
				g.endFrame()
			}
		case stBody:
			k := uint64(len(b))
			if k > g.bodyLeft {
				k = g.bodyLeft
			}
			g.bodyLeft -= k
			b = b[k:]
			if g.bodyLeft == 0 {
				g.endFrame()
			}
		}
	}
	return nil
}

func (g *guardConn) endFrame() {
	g.state = stFlags
	if g.flags&flagMore == 0 {
		g.msgBytes, g.msgFrames = 0, 0
	}
}
