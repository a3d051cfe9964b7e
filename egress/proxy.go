package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"
)

// Decision is one connection the proxy let through or refused.
type Decision struct {
	Session string
	Method  string // CONNECT, or the method of a plain HTTP request
	Host    string // as the client asked for it (printable, bounded)
	Port    int
	Allowed bool
	// Status and Reason describe a refusal as the client's response does:
	// 403 (the policy or the address checks), 429 (too many connections).
	Status int
	Reason string
	Addr   netip.Addr // the address dialed, when allowed
}

// Stats counts a proxy's work so far.
type Stats struct {
	Allowed, Refused   int64 // decisions
	BytesUp, BytesDown int64 // relayed: sandbox → destination, destination → sandbox
}

// Proxy is one session's egress proxy, listening on a unix socket in its
// own directory (Dir). It is safe for concurrent use; Close stops it.
type Proxy struct {
	cfg    Config
	rules  *addressRules
	id     string
	pol    atomic.Pointer[Policy] // SetPolicy replaces it
	dir    string
	notify func(Decision)
	log    zerolog.Logger
	ln     *net.UnixListener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	slots    chan struct{} // connections being served
	overflow chan struct{} // connections being refused for want of a slot
	accepts  *rate.Limiter
	up, down *rate.Limiter

	allowed, refused   atomic.Int64
	bytesUp, bytesDown atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]*dest // client and upstream connections (an upstream's: where it goes), closed by Close
	closed bool

	closeOnce sync.Once
	closeErr  error
}

func newProxy(s *Service, id string, pol Policy, dir string, notify func(Decision)) (*Proxy, error) {
	sock := filepath.Join(dir, SocketName)
	// Bound through a descriptor of the directory: a socket path is
	// limited to 107 bytes, the directory's path is not.
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("egress: listen: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: "/proc/self/fd/" + strconv.Itoa(fd) + "/" + SocketName, Net: "unix"})
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("egress: listen: %w", err)
	}
	ln.SetUnlinkOnClose(false) // Close removes the whole directory
	// Any uid may connect: the sandbox runs as its own. The directory is
	// the sandbox's only way in; it is bound read-only, so the socket
	// cannot be replaced from inside.
	if err := os.Chmod(sock, 0o666); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("egress: listen: %w", err)
	}
	burst := int(min(max(s.cfg.RateBytes, 4<<10), 256<<10))
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		cfg: s.cfg, rules: s.rules, id: id, dir: dir, notify: notify, ln: ln,
		log: s.log.With().Str("session", id).Logger(),
		ctx: ctx, cancel: cancel,
		slots:    make(chan struct{}, s.cfg.MaxConns),
		overflow: make(chan struct{}, s.cfg.MaxConns),
		accepts:  rate.NewLimiter(rate.Limit(s.cfg.ConnRate), max(1, int(2*s.cfg.ConnRate))),
		up:       rate.NewLimiter(rate.Limit(s.cfg.RateBytes), burst),
		down:     rate.NewLimiter(rate.Limit(s.cfg.RateBytes), burst),
		conns:    map[net.Conn]*dest{},
	}
	p.pol.Store(&pol)
	p.wg.Add(1)
	go p.acceptLoop()
	p.log.Info().Strs("allow", pol.Strings()).Msg("egress proxy started")
	return p, nil
}

// Socket returns the host path of the proxy's socket; the sandbox binds
// its directory.
func (p *Proxy) Socket() string { return filepath.Join(p.dir, SocketName) }

// Policy returns the session's allowlist (and deny list).
func (p *Proxy) Policy() Policy { return *p.pol.Load() }

// dest is where an upstream connection goes, as it was checked: the
// name or literal the client asked for, the address dialed, the port and
// whether it is a tunnel.
type dest struct {
	name    string
	ip      netip.Addr // the literal asked for; zero for a name
	addr    netip.Addr
	port    int
	connect bool
}

// SetPolicy replaces the policy (a session's network changed while it
// runs): new connections are checked against pol at once, and every
// open connection pol refuses is closed now (an allowed one goes on).
// It returns how many were closed.
func (p *Proxy) SetPolicy(pol Policy) int {
	p.pol.Store(&pol)
	p.mu.Lock()
	n := 0
	for c, d := range p.conns {
		if d != nil && !pol.admits(*d) {
			c.Close()
			n++
		}
	}
	p.mu.Unlock()
	p.log.Info().Strs("allow", pol.Strings()).Strs("deny", pol.DenyStrings()).Int("closed", n).Msg("egress policy changed")
	return n
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	return Stats{Allowed: p.allowed.Load(), Refused: p.refused.Load(), BytesUp: p.bytesUp.Load(), BytesDown: p.bytesDown.Load()}
}

// Close stops accepting, closes every connection, waits for the proxy's
// goroutines and removes its directory. It is idempotent, and does nothing
// after Detach.
func (p *Proxy) Close() error { return p.stop(true) }

// Detach stops the proxy like Close but leaves its directory, which the
// sandbox binds: the next gateway, adopting the session, resumes the proxy
// there (Service.Resume). Meanwhile the kernel's connections are refused.
func (p *Proxy) Detach() error { return p.stop(false) }

func (p *Proxy) stop(removeDir bool) error {
	p.closeOnce.Do(func() {
		p.cancel()
		lerr := p.ln.Close()
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		if errors.Is(lerr, net.ErrClosed) {
			lerr = nil
		}
		p.closeErr = lerr
		if removeDir {
			p.closeErr = errors.Join(lerr, os.RemoveAll(p.dir))
		}
		st := p.Stats()
		p.log.Info().Bool("detached", !removeDir).Int64("allowed", st.Allowed).Int64("refused", st.Refused).Int64("bytes_up", st.BytesUp).
			Int64("bytes_down", st.BytesDown).Msg("egress proxy stopped")
	})
	return p.closeErr
}

// CloseConnections ends every connection open now (tunnels, and requests
// waiting for or relaying a response) and keeps listening. The session
// calls it once its sandbox is frozen: a frozen kernel holds no
// connection, and its code sees them reset when it thaws. It does not
// block on the connections' goroutines.
func (p *Proxy) CloseConnections() {
	p.mu.Lock()
	n := len(p.conns)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	if n > 0 {
		p.log.Info().Int("sockets", n).Msg("egress connections closed: the sandbox is frozen")
	}
}

// track registers c so Close can end it (and SetPolicy, when d, where
// it goes, is refused); false once the proxy is closed.
func (p *Proxy) track(c net.Conn, d *dest) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || d != nil && !p.pol.Load().admits(*d) { // checked before a SetPolicy that refuses it
		return false
	}
	p.conns[c] = d
	return true
}

// admits reports whether pol lets a connection that was checked as d
// (by an earlier policy) go on.
func (pol Policy) admits(d dest) bool {
	if pol.denies(d.name, d.ip, d.addr, d.port) {
		return false
	}
	return pol.check(d.name, d.ip, d.port, d.connect) == verdictAllowed
}

// isClosed reports whether Close has begun.
func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// acceptLoop accepts connections at most at the configured rate, each
// served by its own goroutine; it ends when Close closes the listener.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		if err := p.accepts.Wait(p.ctx); err != nil {
			return
		}
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			p.log.Warn().Err(err).Msg("egress accept failed")
			select {
			case <-time.After(50 * time.Millisecond):
			case <-p.ctx.Done():
				return
			}
			continue
		}
		busy := false
		select {
		case p.slots <- struct{}{}:
		default:
			select {
			case p.overflow <- struct{}{}:
				busy = true
			default: // far beyond the limit: not even a reason
				c.Close()
				continue
			}
		}
		release := func() { <-p.slots }
		if busy {
			release = func() { <-p.overflow }
		}
		if !p.track(c, nil) {
			c.Close()
			release()
			return
		}
		p.wg.Add(1)
		go p.serve(c, busy, release)
	}
}

// serve reads one request and handles it: a CONNECT tunnel or one plain
// HTTP request. A busy proxy answers 429 once it knows the destination.
func (p *Proxy) serve(c net.Conn, busy bool, release func()) {
	defer p.wg.Done()
	defer release()
	defer p.untrack(c)
	defer func() {
		if r := recover(); r != nil { // a bug costs this connection only
			p.log.Error().Interface("panic", r).Msg("egress connection panicked")
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(p.cfg.HeadTimeout))
	head := &headLimit{r: c, left: p.cfg.MaxHeadBytes}
	br := bufio.NewReaderSize(head, 16<<10)
	req, err := http.ReadRequest(br)
	if err != nil {
		p.log.Debug().Err(err).Msg("egress: unreadable request")
		writeRefusal(c, http.StatusBadRequest, "malformed, oversized or slow request head")
		return
	}
	head.left = -1
	_ = c.SetReadDeadline(time.Time{})
	clock := newConnClock(p.cfg.IdleTimeout, p.cfg.MaxConnDuration)
	client := &timedConn{Conn: c, clock: clock}
	head.r = client // what the client sends next (a tunnel's bytes, a body) is timed
	host, port, err := destination(req)
	d := Decision{Session: p.id, Method: printable(req.Method, 16), Host: printable(host, 260), Port: port}
	if err != nil {
		p.refuse(c, d, http.StatusBadRequest, err.Error())
		return
	}
	if busy {
		p.refuse(c, d, http.StatusTooManyRequests, "too many connections (this session may have "+strconv.Itoa(p.cfg.MaxConns)+" open)")
		return
	}
	addrs, no := p.check(host, port, req.Method == http.MethodConnect)
	switch no.status {
	case 0:
	case http.StatusBadGateway: // allowed, but the name does not resolve
		p.unreachable(c, d, no.reason, nil)
		return
	default:
		p.refuseAddr(c, d, no)
		return
	}
	name, literal, _ := parseHost(host) // check parsed it already
	up, addr, err := p.dial(addrs, dest{name: name, ip: literal, port: port, connect: req.Method == http.MethodConnect})
	if errors.Is(err, errPolicyChanged) {
		p.refuseAddr(c, d, refusal{status: http.StatusForbidden, reason: errPolicyChanged.Error()[len("egress: "):]})
		return
	}
	if err != nil {
		p.unreachable(c, d, "cannot connect to "+d.Host+":"+strconv.Itoa(port), err)
		return
	}
	defer p.untrack(up)
	d.Allowed, d.Addr = true, addr
	p.decided(d, netip.Addr{})
	upstream := &timedConn{Conn: up, clock: clock}
	start := time.Now()
	var upN, downN int64
	var ended error
	if req.Method == http.MethodConnect {
		upN, downN, ended = p.tunnel(client, br, upstream)
	} else {
		upN, downN, ended = p.forward(client, req, upstream)
	}
	ev := p.log.Debug()
	if ended != nil {
		ev = p.log.Info().Str("reason", ended.Error())
	}
	ev.Str("host", d.Host).Int("port", port).Int64("bytes_up", upN).Int64("bytes_down", downN).
		Dur("duration", time.Since(start)).Msg("egress connection closed")
}

// destination reads the host and port a request asks for: the authority of
// a CONNECT, or the URL of an absolute http:// request (port 80 by default).
func destination(req *http.Request) (host string, port int, err error) {
	if req.Method == http.MethodConnect {
		h, ps, err := net.SplitHostPort(req.RequestURI)
		if err != nil || h == "" {
			return req.RequestURI, 0, errors.New("CONNECT needs host:port")
		}
		n, err := parsePort(ps)
		if err != nil {
			return h, 0, err
		}
		return h, n, nil
	}
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		return req.URL.Host, 0, errors.New("only absolute http:// URLs are proxied (https goes through CONNECT)")
	}
	port = 80
	if ps := req.URL.Port(); ps != "" {
		if port, err = parsePort(ps); err != nil {
			return req.URL.Hostname(), 0, err
		}
	}
	return req.URL.Hostname(), port, nil
}

// refusal is why check refuses a destination: the status and reason the
// client gets, and for the operator's log only, the resolved address that
// was refused (never shown to the session: with a wide allowlist it would
// answer internal names for the code).
type refusal struct {
	status int
	reason string
	addr   netip.Addr
}

// check applies the policy and the address rules to host:port, for a
// CONNECT tunnel (connect) or a plain HTTP request. It returns the
// addresses that may be dialed, or why to refuse (status 0: allowed).
func (p *Proxy) check(host string, port int, connect bool) ([]netip.Addr, refusal) {
	name, ip, err := parseHost(host)
	if err != nil {
		return nil, refusal{status: http.StatusForbidden, reason: "not a host name or IP address: " + printable(err.Error(), 200)}
	}
	shown := name
	if ip.IsValid() {
		shown = ip.String()
	}
	forbid := func(why string) ([]netip.Addr, refusal) {
		return nil, refusal{status: http.StatusForbidden, reason: why}
	}
	pol := p.pol.Load()
	if pol.denies(name, ip, netip.Addr{}, port) {
		return forbid(shown + " is denied by this session's network rules")
	}
	v := pol.check(name, ip, port, connect)
	var refused refusal
	switch v {
	case verdictHost:
		if ip.IsValid() {
			refused = refusal{status: http.StatusForbidden, reason: "IP address " + shown + " is not in this session's network allowlist (ask for a host name)"}
		} else {
			refused = refusal{status: http.StatusForbidden, reason: "host " + shown + " is not in this session's network allowlist"}
		}
	case verdictPort:
		refused = refusal{status: http.StatusForbidden, reason: "port " + strconv.Itoa(port) + " is not allowed for " + shown + " by this session's network allowlist"}
	case verdictConnectPort:
		refused = refusal{status: http.StatusForbidden, reason: "CONNECT to port " + strconv.Itoa(port) + " of " + shown + " is not allowed: a pattern without a port tunnels to 443 only (plain http:// goes as a proxied request)"}
	}
	// A name the list does not allow is refused before any lookup (a
	// CIDR block matches IP literals only): the code cannot make the
	// gateway resolve names it was not given.
	if v != verdictAllowed {
		return nil, refused
	}
	if ip.IsValid() { // the client named this address: no secret in saying it
		if why := p.rules.forbidden(ip); why != "" {
			return forbid(shown + " is a forbidden address (" + why + ")")
		}
		return []netip.Addr{ip}, refusal{}
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
	defer cancel()
	found, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", name)
	if err != nil || len(found) == 0 {
		p.log.Debug().Err(err).Str("host", name).Msg("egress: resolution failed")
		return nil, refusal{status: http.StatusBadGateway, reason: "cannot resolve " + name}
	}
	var addrs []netip.Addr
	var no refusal
	for _, a := range found[:min(len(found), 32)] {
		a = a.Unmap()
		if pol.denies(name, netip.Addr{}, a, port) {
			if !no.addr.IsValid() {
				no = refusal{status: http.StatusForbidden, reason: name + " is denied by this session's network rules", addr: a}
			}
			continue
		}
		if why := p.rules.forbidden(a); why != "" {
			if !no.addr.IsValid() {
				// Why, never which address: the reason reaches the session.
				no = refusal{status: http.StatusForbidden, reason: name + " resolves to a forbidden address (" + why + ")", addr: a}
			}
			continue
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, no
	}
	return addrs, refusal{}
}

var errDialForbidden = errors.New("egress: refusing to connect to an unchecked address")

// errPolicyChanged is dial's error when a SetPolicy during the dial
// refuses the destination: a refusal, not an unreachable host.
var errPolicyChanged = errors.New("egress: the session's network rules changed and no longer allow this destination")

// dial connects to the first of addrs that answers, within DialTimeout.
// The dialer checks each address again at the socket: only addresses
// checked by check, never a name, are connected to.
func (p *Proxy) dial(addrs []netip.Addr, to dest) (net.Conn, netip.Addr, error) {
	port := to.port
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
	defer cancel()
	checked := map[netip.Addr]bool{}
	for _, a := range addrs {
		checked[a] = true
	}
	d := net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !checked[ap.Addr().Unmap()] || p.rules.forbidden(ap.Addr().Unmap()) != "" {
			return errDialForbidden
		}
		return nil
	}}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			to.addr = a
			if !p.track(c, &to) {
				c.Close()
				if p.isClosed() {
					return nil, a, ErrClosed
				}
				return nil, a, errPolicyChanged
			}
			return c, a, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.Addr{}, errors.Join(errs...)
}

// tunnel answers a CONNECT and relays bytes both ways until both sides
// are done. A side that ends half-closes the other; once the destination
// is done, the sandbox's side gets tunnelGrace to finish. The connections'
// clock ends both sides at once (an idle or too long tunnel); ended says
// so.
func (p *Proxy) tunnel(c *timedConn, fromClient *bufio.Reader, up *timedConn) (upN, downN int64, ended error) {
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return 0, 0, nil
	}
	clock := c.clock
	var upErr error
	done := make(chan struct{})
	p.wg.Add(1)
	go func() { // owned by the proxy; ends when the sandbox's side ends, or Close closes the connections
		defer p.wg.Done()
		defer close(done)
		upN, upErr = p.pump(up, fromClient, p.up, &p.bytesUp)
		if clockEnded(upErr) {
			clock.stop(c.Conn, up.Conn)
		}
		closeWrite(up.Conn)
	}()
	downN, downErr := p.pump(c, up, p.down, &p.bytesDown)
	if clockEnded(downErr) {
		clock.stop(c.Conn, up.Conn)
	}
	closeWrite(c.Conn)
	select {
	case <-done:
	case <-time.After(tunnelGrace):
		clock.stop(c.Conn, up.Conn) // the sandbox kept its side open
		<-done
	}
	for _, err := range []error{downErr, upErr} {
		if clockEnded(err) {
			return upN, downN, err
		}
	}
	return upN, downN, nil
}

// tunnelGrace is how long a tunnel waits for the sandbox's side once the
// destination has closed.
const tunnelGrace = 10 * time.Second

// forward sends one plain HTTP request to the destination in origin form
// and relays the response, then closes (Connection: close both ways). A
// destination that sends no response within the idle timeout gets the
// client a 504; ended says the clock ended the connection.
func (p *Proxy) forward(c *timedConn, req *http.Request, up *timedConn) (upN, downN int64, ended error) {
	removeHopHeaders(req.Header)
	req.Close = true
	req.RequestURI = ""
	w := &throttledWriter{ctx: p.ctx, w: up, lim: p.up, total: &p.bytesUp}
	if err := req.Write(w); err != nil {
		if clockEnded(err) {
			writeRefusal(c.Conn, http.StatusGatewayTimeout, "the request was not sent: "+err.Error())
			return w.n, 0, err
		}
		writeRefusal(c.Conn, http.StatusBadGateway, "sending the request failed")
		return w.n, 0, nil
	}
	r := &throttledReader{ctx: p.ctx, r: up, lim: p.down, total: &p.bytesDown}
	head := &headLimit{r: r, left: maxResponseHead} // the destination may be hostile too
	br := bufio.NewReader(head)
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			if clockEnded(err) {
				writeRefusal(c.Conn, http.StatusGatewayTimeout, "the destination did not answer: "+err.Error())
				return w.n, r.n, err
			}
			writeRefusal(c.Conn, http.StatusBadGateway, "the destination's response is unreadable")
			return w.n, r.n, nil
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			writeRefusal(c.Conn, http.StatusBadGateway, "protocol upgrades need CONNECT")
			return w.n, r.n, nil
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 { // interim: the client gets the final one
			continue
		}
		head.left = -1
		removeHopHeaders(resp.Header)
		resp.Close = true
		err = resp.Write(c)
		resp.Body.Close()
		if !clockEnded(err) {
			err = nil
		}
		return w.n, r.n, err
	}
}

// maxResponseHead bounds the heads of a destination's responses (interim
// ones included), as http.Transport does.
const maxResponseHead = 1 << 20

// hopHeaders concern one connection, not the request: never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// pump copies src to dst at the limiter's rate until src ends.
func (p *Proxy) pump(dst io.Writer, src io.Reader, lim *rate.Limiter, total *atomic.Int64) (int64, error) {
	r := &throttledReader{ctx: p.ctx, r: src, lim: lim, total: total}
	buf := make([]byte, min(32<<10, lim.Burst()))
	n, err := io.CopyBuffer(writerOnly{dst}, r, buf)
	return n, err
}

// refuse answers a refused connection, logs it and tells the session.
func (p *Proxy) refuse(c net.Conn, d Decision, status int, reason string) {
	p.refuseAddr(c, d, refusal{status: status, reason: reason})
}

// refuseAddr is refuse for check's refusals: the address refused, if
// any, goes to the log only.
func (p *Proxy) refuseAddr(c net.Conn, d Decision, no refusal) {
	d.Allowed, d.Status, d.Reason = false, no.status, printable(no.reason, 300)
	p.decided(d, no.addr)
	writeRefusal(c, no.status, d.Reason)
}

// unreachable answers 502 for a destination the policy allows but that
// cannot be resolved or reached: logged, not a refusal.
func (p *Proxy) unreachable(c net.Conn, d Decision, reason string, err error) {
	p.log.Info().Str("method", d.Method).Str("host", d.Host).Int("port", d.Port).Bool("allowed", true).AnErr("cause", err).
		Str("reason", reason).Msg("egress destination unreachable")
	writeRefusal(c, http.StatusBadGateway, reason)
}

// decided logs a decision, counts it and tells the session. refused, if
// valid, is the resolved address a refusal is about: logged for the
// operator, never part of the Decision.
func (p *Proxy) decided(d Decision, refused netip.Addr) {
	ev := p.log.Info().Str("method", d.Method).Str("host", d.Host).Int("port", d.Port).Bool("allowed", d.Allowed)
	if d.Allowed {
		p.allowed.Add(1)
		ev.Str("addr", d.Addr.String()).Msg("egress connection allowed")
	} else {
		p.refused.Add(1)
		if refused.IsValid() {
			ev = ev.Str("refused_addr", refused.String())
		}
		ev.Int("status", d.Status).Str("reason", d.Reason).Msg("egress connection refused")
	}
	if p.notify != nil {
		p.notify(d)
	}
}

// writeRefusal writes an error response that closes the connection. The
// reason is in the status line too: for a CONNECT, that line is all most
// client libraries show.
func writeRefusal(c net.Conn, status int, reason string) {
	reason = printable(reason, 300)
	body := "glassroom egress: " + reason + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d glassroom egress: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, reason, len(body), body)
}

// printable keeps printable ASCII (others become ?) and at most n bytes:
// hosts come from the sandbox and end up in status lines and logs.
func printable(s string, n int) string {
	b := []byte(s[:min(len(s), n)])
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

func quote(s string) string { return strconv.Quote(printable(s, 300)) }

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// headLimit fails reads past left bytes; left < 0 lifts the limit.
type headLimit struct {
	r    io.Reader
	left int
}

var errHeadTooLarge = errors.New("egress: request head too large")

func (h *headLimit) Read(b []byte) (int, error) {
	if h.left < 0 {
		return h.r.Read(b)
	}
	if h.left == 0 {
		return 0, errHeadTooLarge
	}
	if len(b) > h.left {
		b = b[:h.left]
	}
	n, err := h.r.Read(b)
	h.left -= n
	return n, err
}

// throttledReader reads at most the limiter's burst at a time and waits
// for the limiter after each read.
type throttledReader struct {
	ctx   context.Context
	r     io.Reader
	lim   *rate.Limiter
	total *atomic.Int64
	n     int64
}

func (t *throttledReader) Read(b []byte) (int, error) {
	if len(b) > t.lim.Burst() {
		b = b[:t.lim.Burst()]
	}
	n, err := t.r.Read(b)
	if n > 0 {
		t.n += int64(n)
		t.total.Add(int64(n))
		if werr := t.lim.WaitN(t.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// throttledWriter writes in pieces of at most the limiter's burst, waiting
// for the limiter before each.
type throttledWriter struct {
	ctx   context.Context
	w     io.Writer
	lim   *rate.Limiter
	total *atomic.Int64
	n     int64
}

func (t *throttledWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		k := min(len(b), t.lim.Burst())
		if err := t.lim.WaitN(t.ctx, k); err != nil {
			return written, err
		}
		n, err := t.w.Write(b[:k])
		written += n
		t.n += int64(n)
		t.total.Add(int64(n))
		if err != nil {
			return written, err
		}
		b = b[k:]
	}
	return written, nil
}

// writerOnly hides a destination's ReadFrom, so copies go through the
// throttled reader rather than around it.
type writerOnly struct{ io.Writer }
