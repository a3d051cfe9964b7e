package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/egress/egresstest"
	"github.com/rs/zerolog"
)

// TestConnectTo80IsRefused: a pattern without a port lets plain HTTP go
// to 80 and 443 but CONNECT to 443 only. A CONNECT to :80 is a raw tunnel
// whose Host header the proxy never sees: through it code could reach
// every other site on the allowed name's CDN edge.
func TestConnectTo80IsRefused(t *testing.T) {
	h := startProxy(t, egress.Config{AllowPrivate: loopback, Allow: []string{"*.test"}}, "allowed.test")
	conn, err := egresstest.Dial(context.Background(), h.proxy.Socket())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n")
	line, _ := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	const want = "CONNECT to port 80 of allowed.test is not allowed: a pattern without a port tunnels to 443 only"
	if !strings.HasPrefix(line, "HTTP/1.1 403 glassroom egress: "+want) {
		t.Errorf("CONNECT allowed.test:80: %q", line)
	}
	ds := h.decisions()
	if len(ds) != 1 || ds[0].Allowed || ds[0].Method != "CONNECT" || ds[0].Port != 80 || !strings.HasPrefix(ds[0].Reason, want) {
		t.Errorf("decisions %+v", ds)
	}
	if n := h.res.Lookups("allowed.test"); n != 0 {
		t.Errorf("a refused CONNECT was resolved (%d lookups)", n)
	}
	// Plain HTTP to 80 and CONNECT to 443 pass the policy: the proxy goes on
	// to resolve and dial (whatever 127.0.0.1:80 and :443 answer here).
	for _, req := range []string{
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
	} {
		conn, err := egresstest.Dial(context.Background(), h.proxy.Socket())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(conn, req)
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if strings.Contains(line, " 403 ") || line == "" {
			t.Errorf("%.40q: %q, want past the policy", req, line)
		}
	}
	if n := h.res.Lookups("allowed.test"); n != 2 {
		t.Errorf("allowed.test looked up %d times, want 2", n)
	}
	// A session cannot get CONNECT to 80 back by naming the port when the
	// operator's pattern has none.
	if _, err := startService(t, egress.Config{Allow: []string{"*.test"}}).Admit([]string{"allowed.test:80"}); !errors.Is(err, egress.ErrPolicy) {
		t.Errorf("allowed.test:80 within *.test: %v", err)
	}
}

func startService(t *testing.T, cfg egress.Config) *egress.Service {
	t.Helper()
	cfg.Dir = egressDir(t)
	svc, err := egress.NewService(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// fakeHost is the host's interface addresses as a test sets them.
type fakeHost struct {
	mu    sync.Mutex
	addrs []netip.Addr
	reads int
}

func (f *fakeHost) set(addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = nil
	for _, a := range addrs {
		f.addrs = append(f.addrs, netip.MustParseAddr(a))
	}
}

func (f *fakeHost) list() ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return append([]netip.Addr(nil), f.addrs...), nil
}

// TestHostAndProviderAddressesAreRefused, through the real proxy: an
// address bound on the host's interfaces is refused as such, noticed as
// soon as the host gains it, and so are the cloud providers' service
// addresses. Every address here is either loopback or refused before any
// dial, with or without the rule under test (they are in special ranges
// the operator did not allow): no traffic leaves the machine. The rule's
// precedence over --egress-allow-private is tested in address_test.go on
// the decision alone.
func TestHostAndProviderAddressesAreRefused(t *testing.T) {
	plain, _ := newUpstream(t)
	port := strconv.Itoa(plain.port)
	host := &fakeHost{}
	host.set("127.0.0.1", "::1") // what lo has: loopback stays --egress-allow-private's to open
	h := startProxy(t, egress.Config{AllowPrivate: loopback, HostAddrs: host.list, HostAddrsTTL: time.Nanosecond}, "*.test:"+port)
	h.res.Set("self.test", "192.0.2.10")
	h.res.Set("alibaba.test", "100.100.100.200")
	h.res.Set("aws6.test", "fd00:ec2::254")
	c := h.client(nil)
	fetch := func(name string) (int, string) {
		t.Helper()
		status, body, err := get(t, c, "http://"+name+":"+port+"/")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return status, body
	}
	if status, body := fetch("allowed.test"); status != 200 {
		t.Fatalf("loopback with --egress-allow-private: %d %q", status, body)
	}
	if status, body := fetch("self.test"); status != 403 || !strings.Contains(body, "self.test resolves to a forbidden address (documentation)") {
		t.Errorf("before the host has it: %d %q", status, body)
	}
	host.set("127.0.0.1", "::1", "192.0.2.10") // the host gains an address
	if status, body := fetch("self.test"); status != 403 || !strings.Contains(body, "self.test resolves to a forbidden address (an address of the gateway host itself)") {
		t.Errorf("an address of the host: %d %q", status, body)
	}
	if status, body := fetch("alibaba.test"); status != 403 || !strings.Contains(body, "alibaba.test resolves to a forbidden address (cloud metadata service (Alibaba))") {
		t.Errorf("a provider's metadata address: %d %q", status, body)
	}
	if status, body := fetch("aws6.test"); status != 403 || !strings.Contains(body, "(cloud metadata service (AWS, IPv6))") {
		t.Errorf("a provider's IPv6 metadata address: %d %q", status, body)
	}
	for _, d := range h.decisions()[1:] {
		if d.Allowed || strings.Contains(d.Reason, "192.0.2.10") || strings.Contains(d.Reason, "100.100.100.200") || strings.Contains(d.Reason, "fd00:ec2") {
			t.Errorf("decision %+v", d)
		}
	}
	if plain.hits.Load() != 1 {
		t.Errorf("upstream hits %d, want 1", plain.hits.Load())
	}

	// --egress-allow-address opens an address whatever it is: here
	// loopback, without --egress-allow-private.
	h2 := startProxy(t, egress.Config{AllowAddress: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, HostAddrs: host.list}, "allowed.test:"+port)
	if status, body, err := get(t, h2.client(nil), "http://allowed.test:"+port+"/"); status != 200 || err != nil {
		t.Errorf("--egress-allow-address 127.0.0.1: %d %q %v", status, body, err)
	}
}

// rawUpstream is a TCP server on host loopback that hands the test each
// connection it accepts.
func rawUpstream(t *testing.T) (port int, conns <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(ch)
		for c := range ch {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port, ch
}

// openTunnel CONNECTs through the proxy and returns the client side (past
// the 200) and the upstream's side.
func openTunnel(t *testing.T, h *harness, port int, conns <-chan net.Conn) (*bufio.Reader, net.Conn, net.Conn) {
	t.Helper()
	c, err := egresstest.Dial(context.Background(), h.proxy.Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n", port)
	br := bufio.NewReader(c)
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("CONNECT: %q", line)
	}
	br.ReadString('\n')
	var up net.Conn
	select {
	case up = <-conns:
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream got no connection")
	}
	t.Cleanup(func() { up.Close() })
	return br, c, up
}

// waitEOF reads r until it ends; it fails the test if it does not end
// within a generous bound (the proxy's limits are far smaller).
func waitEOF(t *testing.T, what string, c net.Conn, r io.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, r)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("%s: the connection was not ended: %v", what, err)
	}
}

// TestIdleTunnelIsClosed: a tunnel no byte crosses for the idle timeout
// is closed, both sides, and its slot is free again.
func TestIdleTunnelIsClosed(t *testing.T) {
	port, conns := rawUpstream(t)
	h := startProxy(t, egress.Config{AllowPrivate: loopback, MaxConns: 1, IdleTimeout: 200 * time.Millisecond}, "allowed.test:*")
	br, c, up := openTunnel(t, h, port, conns)
	c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(up, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("relay: %q %v", buf, err)
	}
	waitEOF(t, "sandbox side", c, br)
	waitEOF(t, "destination side", up, up)
	// The slot is free: a second tunnel opens (MaxConns is 1).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c2, err := egresstest.Dial(context.Background(), h.proxy.Socket())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c2, "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", port)
		line, _ := bufio.NewReader(c2).ReadString('\n')
		c2.Close()
		if strings.HasPrefix(line, "HTTP/1.1 200") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle tunnel's slot was not freed: %q", line)
		}
	}
}

// TestBusyTunnelOutlivesTheIdleTimeout: bytes in one direction keep the
// whole tunnel alive, also the direction nothing crosses.
func TestBusyTunnelOutlivesTheIdleTimeout(t *testing.T) {
	port, conns := rawUpstream(t)
	const idle = 2 * time.Second
	h := startProxy(t, egress.Config{AllowPrivate: loopback, IdleTimeout: idle}, "allowed.test:*")
	br, c, up := openTunnel(t, h, port, conns)
	// The destination sends a byte every 20 ms for twice the idle timeout;
	// the sandbox sends nothing.
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for time.Since(start) < 2*idle {
			if _, err := up.Write([]byte{'x'}); err != nil {
				errc <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		up.Write([]byte{'.'})
	}()
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	got, err := br.ReadString('.')
	if err != nil {
		t.Fatalf("the busy tunnel ended after %d bytes (%v): %v", len(got), time.Since(start), err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Both ways still work.
	c.Write([]byte("up"))
	buf := make([]byte, 2)
	up.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(up, buf); err != nil || string(buf) != "up" {
		t.Errorf("upstream after %v: %q %v", time.Since(start), buf, err)
	}
}

// TestTunnelTimeLimit: a tunnel is closed once open for the connection
// time limit, however busy.
func TestTunnelTimeLimit(t *testing.T) {
	port, conns := rawUpstream(t)
	h := startProxy(t, egress.Config{AllowPrivate: loopback, IdleTimeout: time.Hour, MaxConnDuration: 300 * time.Millisecond}, "allowed.test:*")
	br, c, up := openTunnel(t, h, port, conns)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // an echo: the tunnel is never idle
		defer close(done)
		io.Copy(up, up)
	}()
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				if _, err := c.Write([]byte("tick")); err != nil {
					return
				}
			}
		}
	}()
	defer close(stop)
	waitEOF(t, "busy tunnel past its time limit", c, br)
	up.SetDeadline(time.Now().Add(30 * time.Second))
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("the destination side outlived the time limit")
	}
}

// TestSilentDestinationGets504: a plain request whose destination never
// answers ends after the idle timeout with a 504.
func TestSilentDestinationGets504(t *testing.T) {
	port, _ := rawUpstream(t) // accepts and says nothing
	h := startProxy(t, egress.Config{AllowPrivate: loopback, IdleTimeout: 200 * time.Millisecond}, "allowed.test:*")
	status, body, err := get(t, h.client(nil), "http://allowed.test:"+strconv.Itoa(port)+"/")
	if err != nil || status != http.StatusGatewayTimeout || !strings.Contains(body, "glassroom egress: the destination did not answer") {
		t.Errorf("%d %q %v", status, body, err)
	}
}

// TestCloseConnectionsKeepsListening: what a session does when its kernel
// is frozen ends every tunnel, and later ones work.
func TestCloseConnectionsKeepsListening(t *testing.T) {
	port, conns := rawUpstream(t)
	h := startProxy(t, egress.Config{AllowPrivate: loopback}, "allowed.test:*")
	br, c, up := openTunnel(t, h, port, conns)
	h.proxy.CloseConnections()
	waitEOF(t, "sandbox side", c, br)
	waitEOF(t, "destination side", up, up)
	br, c, up = openTunnel(t, h, port, conns)
	c.Write([]byte("again"))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(up, buf); err != nil || string(buf) != "again" {
		t.Errorf("after CloseConnections: %q %v", buf, err)
	}
	_ = br
}
