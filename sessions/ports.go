package sessions

// The TCP ports a session's sandbox serves on its own loopback, and
// connections to them through the session's channel into the sandbox
// (previews): the sandbox's network is never opened to the host.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// MaxPortConns bounds a session's open connections to its ports: a
// browser opens six per preview host, and a dev server's hot reload one
// more.
const MaxPortConns = 32

// relayConnectWait bounds DialPort's wait for the relay to connect (the
// launcher gives a connection 5 s), whatever the caller's context: an
// HTTP transport dials with one that never ends.
const relayConnectWait = 15 * time.Second

var (
	// ErrNoListener is DialPort's error when nothing in the sandbox
	// listens on the port.
	ErrNoListener = errors.New("sessions: nothing in the sandbox listens on this port")
	// ErrTooManyPortConns is DialPort's error while MaxPortConns
	// connections are open.
	ErrTooManyPortConns = errors.New("sessions: too many open connections to this session's ports")
)

// Port is a TCP port a process of the sandbox listens on, reachable on
// its loopback: Address is where it listens (0.0.0.0, 127.0.0.1, ::, ::1).
type Port struct {
	Port    int    `json:"port"`
	Address string `json:"address"`
}

// Ports lists the TCP ports the sandbox listens on that its loopback
// reaches, lowest first, without the launcher's own (the egress
// forwarder's); the kernels' own listeners (ipykernel's, on ephemeral
// ports) are among them. It runs one short command in the sandbox
// (reading /proc/net/tcp and tcp6 there).
func (m *Commands) Ports(ctx context.Context) ([]Port, error) {
	cr, spec, err := m.runner(sandbox.CommandSpec{Cmd: "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null"})
	if err != nil {
		return nil, err
	}
	done, err := m.probe(ctx, "list ports")
	if err != nil {
		return nil, err
	}
	defer done()
	c, release, err := m.launch(ctx, cr, spec, "list ports")
	if err != nil {
		return nil, err
	}
	defer release()
	_ = c.CloseStdin()
	var out bytes.Buffer
	for o := range c.Output() {
		if o.Stream == sandbox.Stdout && out.Len() < 4<<20 {
			out.Write(o.Data)
		}
	}
	return parseListeners(&out), nil
}

// parseListeners reads /proc/net/tcp's format: the listening sockets
// (state 0A) on an address the loopback reaches.
func parseListeners(r io.Reader) []Port {
	seen := map[Port]bool{}
	var ports []Port
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		host, portHex, ok := strings.Cut(f[1], ":")
		port, err := strconv.ParseUint(portHex, 16, 16)
		if !ok || err != nil || port == 0 || port == sandbox.EgressProxyPort {
			continue
		}
		addr, ok := procAddr(host)
		if !ok || (!addr.IsUnspecified() && !addr.Unmap().IsLoopback()) {
			continue
		}
		p := Port{Port: int(port), Address: addr.Unmap().String()}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	slices.SortFunc(ports, func(a, b Port) int {
		if a.Port != b.Port {
			return a.Port - b.Port
		}
		return strings.Compare(a.Address, b.Address)
	})
	return ports
}

// procAddr decodes an address of /proc/net/tcp{,6}: hex of 32-bit words
// in the host's (little-endian) order.
func procAddr(h string) (netip.Addr, bool) {
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, false
	}
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:]))
	}
	a, ok := netip.AddrFromSlice(b)
	return a, ok
}

// DialPort connects to port on the sandbox's loopback through a relay in
// the sandbox (sandbox.CommandSpec.Relay), at most MaxPortConns at once;
// ErrNoListener when nothing listens there. The connection holds the
// sandbox awake; idle (no byte either way for that long; 0: no bound)
// closes it. The caller must Close it; the session's close ends it too.
func (m *Commands) DialPort(ctx context.Context, port int, idle time.Duration) (*PortConn, error) {
	cr, spec, err := m.runner(sandbox.CommandSpec{Relay: port})
	if err != nil {
		return nil, err
	}
	p := &PortConn{m: m, port: port}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrClosed
	case len(m.relays) >= MaxPortConns:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w (at most %d)", ErrTooManyPortConns, MaxPortConns)
	}
	m.relays[p] = struct{}{} // holds the place while it starts
	m.mu.Unlock()
	c, release, err := m.launch(ctx, cr, spec, "connect to port "+strconv.Itoa(port))
	if err != nil {
		m.forgetRelay(p)
		return nil, err
	}
	m.mu.Lock()
	p.c, p.release = c, release
	closed := m.closed
	m.mu.Unlock()
	if closed {
		_ = p.Close()
		return nil, ErrClosed
	}
	// The relay's first output says whether it connected; a relay that
	// says nothing (stopped by the code) gives its place back.
	wait := time.NewTimer(relayConnectWait)
	defer wait.Stop()
	select {
	case <-wait.C:
		_ = p.Close()
		return nil, fmt.Errorf("sessions: connect to port %d: %w (the sandbox's relay did not answer)", port, ErrNoListener)
	case o, ok := <-c.Output():
		if !ok || o.Stream != sandbox.Stderr || string(o.Data) != sandbox.RelayConnected {
			why := strings.TrimPrefix(string(o.Data), "refused: ")
			_ = p.Close()
			if !ok || why == "" {
				return nil, fmt.Errorf("sessions: connect to port %d: %w", port, ErrNoListener)
			}
			return nil, fmt.Errorf("sessions: connect to port %d: %w (%s)", port, ErrNoListener, truncateUTF8(why, 200))
		}
	case <-ctx.Done():
		_ = p.Close()
		return nil, fmt.Errorf("sessions: connect to port %d: %w", port, ctx.Err())
	}
	if idle > 0 {
		p.idle = idle
		p.timer = time.AfterFunc(idle, func() { _ = c.Kill() })
	}
	m.s.Touch()
	return p, nil
}

func (m *Commands) forgetRelay(p *PortConn) {
	m.mu.Lock()
	delete(m.relays, p)
	m.mu.Unlock()
}

// PortConn is a connection to a port of the sandbox (Commands.DialPort):
// a net.Conn whose deadlines are not supported (Close unblocks Read and
// Write; the idle bound ends it). One Read and one Write may run at
// once, and Close from any goroutine.
type PortConn struct {
	m       *Commands
	port    int
	c       sandbox.Command
	release func()
	idle    time.Duration
	timer   *time.Timer // ends the relay once idle; nil without a bound
	rest    []byte      // of the last output, not read yet
	once    sync.Once
}

var _ net.Conn = (*PortConn)(nil)

// active notes traffic: the idle bound starts again, and the session is
// in use (no idle expiry while a preview is used).
func (p *PortConn) active() {
	if p.timer != nil {
		p.timer.Reset(p.idle)
	}
	p.m.s.Touch()
}

// Read reads what the server sent; io.EOF once it ended its side.
func (p *PortConn) Read(b []byte) (int, error) {
	for len(p.rest) == 0 {
		o, ok := <-p.c.Output()
		if !ok {
			return 0, io.EOF
		}
		if o.Stream == sandbox.Stdout {
			p.rest = o.Data
		}
	}
	p.active()
	n := copy(b, p.rest)
	p.rest = p.rest[n:]
	return n, nil
}

// Write sends b to the server; it blocks while the server reads none
// (up to 1 MiB waits in the sandbox).
func (p *PortConn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if err := p.c.Write(b); err != nil {
		return 0, fmt.Errorf("sessions: port %d: %w", p.port, net.ErrClosed)
	}
	p.active()
	return len(b), nil
}

// CloseWrite ends what the client sends (the server reads its end).
func (p *PortConn) CloseWrite() error { return p.c.CloseStdin() }

// Close ends the connection and the relay, and gives the place back.
// Idempotent.
func (p *PortConn) Close() error {
	p.once.Do(func() {
		if p.timer != nil {
			p.timer.Stop()
		}
		if p.c != nil {
			_ = p.c.Kill()
			for range p.c.Output() {
			}
			p.release()
		}
		p.m.forgetRelay(p)
	})
	return nil
}

// portAddr is a PortConn's address: the port in the sandbox.
type portAddr int

func (a portAddr) Network() string { return "sandbox" }
func (a portAddr) String() string  { return "sandbox:" + strconv.Itoa(int(a)) }

// LocalAddr implements net.Conn.
func (p *PortConn) LocalAddr() net.Addr { return portAddr(0) }

// RemoteAddr implements net.Conn: the port in the sandbox.
func (p *PortConn) RemoteAddr() net.Addr { return portAddr(p.port) }

// SetDeadline implements net.Conn: deadlines are not supported.
func (p *PortConn) SetDeadline(time.Time) error { return nil }

// SetReadDeadline implements net.Conn: not supported.
func (p *PortConn) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline implements net.Conn: not supported.
func (p *PortConn) SetWriteDeadline(time.Time) error { return nil }
