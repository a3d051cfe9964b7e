package k8s

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/workspace"
	"github.com/glassroom/glassroom/workspace/remote"
	"github.com/rs/zerolog"
)

// AgentConfig configures the pod agent (`glassroom pod-agent`), which runs
// next to the kernel in its pod, as the session's uid: it serves the
// workspace (workspace/remote) and relays the gateway's kernel commands
// to the supervisor.
type AgentConfig struct {
	Workspace  string // the workspace directory
	Token      string // the bearer token (from the session's Secret)
	Control    string // the supervisor's control file (the agent writes it)
	Status     string // the supervisor's status file (the kernel writes it: hostile)
	QuotaBytes int64  // what uploads may fill the workspace to (0: none)
	WatchDirs  int    // directories tracked for changes (4096)
	WatchPaths int    // changed paths reported per execution (10,000)
	// TLS, when set, is the agent's server configuration (its session's
	// certificate): every request, the kernel channels included, is
	// encrypted. Pods always have it; nil serves plain HTTP (tests).
	TLS *tls.Config
	// KernelIPC is the socket prefix of the first kernel's ipc
	// connection file (KernelSockets): channel N of kernel.Channels (from
	// 1) is the unix socket KernelIPC-N, where the agent relays it.
	KernelIPC string
	// ContextsDir holds each context's ipc directory (its name), whose
	// sockets use the prefix "k" (supervisor.py writes their connection
	// files); "" relays no context.
	ContextsDir string
	// Spawn is the supervisor's spawn socket (SpawnSocket); "" runs no
	// context and no command.
	Spawn string
	// FenceFile is where the agent keeps the highest gateway epoch it has
	// seen (fence.go); "" keeps it in memory only.
	FenceFile string
	// KernelHost and KernelPorts are where a pod made before KernelIPC
	// has its kernel listen (127.0.0.1, five ports in kernel.Channels
	// order), used when KernelIPC is "".
	KernelHost  string
	KernelPorts []int
}

// KernelCommand is what the gateway asks of the supervisor: run
// generation Gen, or stop it.
type KernelCommand struct {
	Gen int64 `json:"gen"`
	Run bool  `json:"run"`
}

// KernelStatus is the supervisor's report on a generation.
type KernelStatus struct {
	Gen    int64  `json:"gen"`
	State  string `json:"state"` // starting, ready, stopped, exited ("" before any)
	Reason string `json:"reason,omitempty"`
}

const kernelPath = "/v1/kernel"

// ServeAgent serves the agent on ln until ctx ends, then shuts down.
func ServeAgent(ctx context.Context, cfg AgentConfig, ln net.Listener, log zerolog.Logger) error {
	if cfg.WatchDirs == 0 {
		cfg.WatchDirs = 4096
	}
	if cfg.WatchPaths == 0 {
		cfg.WatchPaths = 10000
	}
	if cfg.KernelHost == "" {
		cfg.KernelHost = "127.0.0.1"
	}
	if len(cfg.KernelPorts) != 0 && len(cfg.KernelPorts) != len(kernel.Channels) {
		return fmt.Errorf("k8s: agent: %d kernel ports, want %d", len(cfg.KernelPorts), len(kernel.Channels))
	}
	root, err := workspace.OpenAs(cfg.Workspace, os.Geteuid(), os.Getegid())
	if err != nil {
		return fmt.Errorf("k8s: agent: %w", err)
	}
	defer func() { _ = root.Close() }()
	watch, err := workspace.NewWatcher(root, cfg.WatchDirs, cfg.WatchPaths)
	if err != nil {
		log.Warn().Err(err).Msg("workspace changes will not be tracked")
		watch = nil
	} else {
		defer func() { _ = watch.Close() }()
	}
	srv, err := remote.NewServer(root, watch, remote.ServerConfig{Token: cfg.Token, QuotaBytes: cfg.QuotaBytes})
	if err != nil {
		return fmt.Errorf("k8s: agent: %w", err)
	}
	a := &agent{cfg: cfg, log: log, tunnels: map[net.Conn]int64{}, epoch: readFence(cfg.FenceFile)}
	srv.Handle("PUT "+kernelPath, a.command)
	srv.Handle("GET "+kernelPath, a.status)
	srv.Handle("GET "+channelPath+"{name}", a.channel)
	srv.Handle("GET "+contextPath+"{context}/channel/{name}", a.contextChannel)
	srv.Handle("GET "+spawnPath, a.spawn)
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	// Requests live in ctx: a shutdown ends the long ones (file watches).
	hs := &http.Server{Handler: a.fence(srv.Authorized, srv), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }() // owned here; ends with Shutdown below
	select {
	case err := <-done:
		a.closeTunnels()
		return fmt.Errorf("k8s: agent: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	a.closeTunnels() // hijacked: Shutdown does not see them
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("k8s: agent: %w", err)
	}
	return nil
}

type agent struct {
	cfg AgentConfig
	log zerolog.Logger

	mu      sync.Mutex
	closed  bool
	epoch   int64              // the highest gateway epoch seen (fence.go)
	tunnels map[net.Conn]int64 // connections being relayed, by the epoch they were opened under
	wg      sync.WaitGroup     // their relays
}

// channelPath + a channel's name (shell, iopub, stdin, control, hb) is
// the kernel channel tunnel: a GET with "Upgrade: glassroom-channel" and
// the token is answered 101 once the agent has connected to that port of
// the kernel on the pod's loopback, then carries the channel's bytes both
// ways until either side closes.
const (
	channelPath    = "/v1/channel/"
	channelUpgrade = "glassroom-channel"
)

// contextPath + a context's name + "/channel/" + a channel's name is a
// context's kernel channel tunnel, and spawnPath the supervisor's spawn
// socket as a tunnel (the request line, the answer, then the process's
// stream; either side may end its writing first: see halfCloser). Both
// upgrade like channelPath.
const (
	contextPath = "/v1/context/"
	spawnPath   = "/v1/spawn"
)

// channelIndex returns the position of the channel name in
// kernel.Channels, or -1.
func channelIndex(name string) int {
	for i, ch := range kernel.Channels {
		if string(ch) == name {
			return i
		}
	}
	return -1
}

// channel serves one channel tunnel of the first kernel (see channelPath).
// It returns when the tunnel ends; the agent's shutdown ends every tunnel.
func (a *agent) channel(w http.ResponseWriter, r *http.Request) {
	i := channelIndex(r.PathValue("name"))
	var network, addr string
	switch {
	case i < 0:
	case a.cfg.KernelIPC != "":
		network, addr = "unix", kernel.NewIPCConnection(a.cfg.KernelIPC).SocketPath(kernel.Channels[i])
	case len(a.cfg.KernelPorts) == len(kernel.Channels):
		network, addr = "tcp", net.JoinHostPort(a.cfg.KernelHost, strconv.Itoa(a.cfg.KernelPorts[i]))
	}
	if network == "" {
		http.Error(w, "no such channel", http.StatusNotFound)
		return
	}
	a.tunnel(w, r, network, addr, false)
}

// contextChannel serves one channel tunnel of a context's kernel.
func (a *agent) contextChannel(w http.ResponseWriter, r *http.Request) {
	i, name := channelIndex(r.PathValue("name")), r.PathValue("context")
	if i < 0 || a.cfg.ContextsDir == "" || !contextName.MatchString(name) {
		http.Error(w, "no such channel", http.StatusNotFound)
		return
	}
	prefix := filepath.Join(a.cfg.ContextsDir, name, "k")
	a.tunnel(w, r, "unix", kernel.NewIPCConnection(prefix).SocketPath(kernel.Channels[i]), false)
}

// spawn carries a tunnel to the supervisor's spawn socket.
func (a *agent) spawn(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Spawn == "" {
		http.Error(w, "this pod runs no contexts and no commands", http.StatusNotFound)
		return
	}
	a.tunnel(w, r, "unix", a.cfg.Spawn, true)
}

// tunnel answers an upgrade request with 101 once it has connected to
// network/addr in the pod, then carries bytes both ways until the tunnel
// ends (with halfClose, until both sides have ended their writing).
func (a *agent) tunnel(w http.ResponseWriter, r *http.Request, network, addr string, halfClose bool) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), channelUpgrade) {
		http.Error(w, "upgrade required", http.StatusUpgradeRequired)
		return
	}
	kc, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(r.Context(), network, addr)
	if err != nil {
		http.Error(w, "the kernel does not answer on that channel", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		kc.Close()
		http.Error(w, "no tunnel on this connection", http.StatusInternalServerError)
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		kc.Close()
		return
	}
	if !a.track(requestEpoch(r), conn, kc) {
		conn.Close()
		kc.Close()
		return
	}
	defer a.untrack(conn, kc)
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: " + channelUpgrade + "\r\nConnection: Upgrade\r\n\r\n")
	if err := brw.Flush(); err != nil {
		return
	}
	// What the client sent after its request, read ahead by the server,
	// goes first: brw.Reader reads conn on.
	client := &bufferedConn{Conn: conn, r: brw.Reader}
	if halfClose {
		spliceHalves(client, kc)
		return
	}
	splice(client, kc)
}

// contextName is sandbox.ContextPattern, kept here so that the agent's
// paths never depend on what another package accepts.
var contextName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// bufferedConn reads through r (a reader over the connection that may
// have read ahead of what it returned), and writes and closes the
// connection itself.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// splice copies a's bytes to b and b's to a until either side ends, then
// closes both. It returns when both copies have.
func splice(a, b net.Conn) {
	done := make(chan struct{})
	go func() { // owned here: joined below
		defer close(done)
		_, _ = io.Copy(a, b)
		a.Close()
		b.Close()
	}()
	_, _ = io.Copy(b, a)
	a.Close()
	b.Close()
	<-done
}

// halfCloser is a connection whose writing can end alone (TCP, unix and
// TLS connections).
type halfCloser interface {
	CloseWrite() error
}

// CloseWrite ends the writing of the connection under c, when it can.
func (c *bufferedConn) CloseWrite() error {
	if hc, ok := c.Conn.(halfCloser); ok {
		return hc.CloseWrite()
	}
	return c.Conn.Close()
}

// spliceHalves is splice for streams whose two directions end apart (a
// command's stdin ends, its output goes on): the end of a's bytes ends
// b's writing only, and the other way round; both are closed once both
// directions have ended.
func spliceHalves(a, b net.Conn) {
	half := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		hc, ok := dst.(halfCloser)
		if err != nil || !ok || hc.CloseWrite() != nil {
			a.Close()
			b.Close()
		}
	}
	done := make(chan struct{})
	go func() { // owned here: joined below
		defer close(done)
		half(a, b)
	}()
	half(b, a)
	<-done
	a.Close()
	b.Close()
}

// track records a tunnel's two connections, opened under epoch, unless
// the agent is closing or a higher epoch was seen meanwhile.
func (a *agent) track(epoch int64, conns ...net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || epoch < a.epoch {
		return false
	}
	for _, c := range conns {
		a.tunnels[c] = epoch
	}
	a.wg.Add(1)
	return true
}

func (a *agent) untrack(conns ...net.Conn) {
	a.mu.Lock()
	for _, c := range conns {
		delete(a.tunnels, c)
	}
	a.mu.Unlock()
	a.wg.Done()
}

// closeTunnels ends every tunnel and waits for their relays.
func (a *agent) closeTunnels() {
	a.mu.Lock()
	a.closed = true
	for c := range a.tunnels {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// command writes the control file (tmp file, then rename: the supervisor
// never reads half of it).
func (a *agent) command(w http.ResponseWriter, r *http.Request) {
	var cmd KernelCommand
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&cmd); err != nil || cmd.Gen < 1 {
		http.Error(w, "bad command", http.StatusBadRequest)
		return
	}
	if err := writeFileAtomic(a.cfg.Control, cmd); err != nil {
		http.Error(w, "cannot write the control file", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	return err
}

// readStatus reads the status file, which the sandboxed code can write:
// no symlink, bounded, any garbage is "no status".
func readStatus(path string) KernelStatus {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return KernelStatus{}
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return KernelStatus{}
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil || len(b) > 4096 {
		return KernelStatus{}
	}
	var s KernelStatus
	if json.Unmarshal(b, &s) != nil || s.Gen < 0 {
		return KernelStatus{}
	}
	s.Reason = sanitize(s.Reason, 200)
	return s
}

// sanitize keeps at most n printable ASCII bytes of s.
func sanitize(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// met reports whether st answers a wait for gen: "ready" waits for the
// generation to be ready or over, "ended" for it to be over.
func met(st KernelStatus, gen int64, until string) bool {
	if st.Gen > gen {
		return true
	}
	if st.Gen < gen {
		return false
	}
	switch st.State {
	case "stopped", "exited":
		return true
	case "ready":
		return until == "ready"
	}
	return false
}

// status answers GET /v1/kernel?gen=N&until=ready|ended&wait_ms=M: the
// status once it meets the wait, or when M (at most 25 s) has passed.
func (a *agent) status(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	gen, _ := strconv.ParseInt(q.Get("gen"), 10, 64)
	wait, _ := strconv.Atoi(q.Get("wait_ms"))
	until := q.Get("until")
	deadline := time.Now().Add(time.Duration(min(max(wait, 0), 25000)) * time.Millisecond)
	epoch := requestEpoch(r)
	st := readStatus(a.cfg.Status)
	for !met(st, gen, until) && time.Now().Before(deadline) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		if a.stale(epoch) { // fenced while it waited: the old owner hears it now
			refuseFenced(w)
			return
		}
		st = readStatus(a.cfg.Status)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

// ReadAgentToken reads the token file (the Secret's item).
func ReadAgentToken(path string) (string, error) {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return "", fmt.Errorf("k8s: agent token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < remote.MinTokenBytes {
		return "", errors.New("k8s: agent token too short")
	}
	return tok, nil
}
