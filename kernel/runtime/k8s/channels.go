package k8s

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// channelDialer opens one kernel channel's tunnel through a pod's agent.
type channelDialer func(ctx context.Context, ch kernel.Channel) (net.Conn, error)

// channelRelay is the gateway's end of one session's kernel channels. The
// kernel listens only on its pod's loopback; the gateway's ZeroMQ sockets
// connect to five unix sockets in a directory only this process can
// enter (0700), and each connection accepted there is carried through
// its own tunnel to the pod's agent (TLS with the session's pinned
// certificate, the session's token), which connects it to the kernel's
// port. Nothing on the pod network reaches a kernel port, and what
// crosses it is encrypted and authenticated.
//
// The relay owns its accept loops and one goroutine pair per carried
// connection; Close stops them all and waits.
type channelRelay struct {
	dir  string
	dial channelDialer
	lns  []net.Listener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// channelDialTimeout bounds a tunnel's dial, TLS handshake and upgrade.
const channelDialTimeout = 5 * time.Second

// newChannelRelay listens on the five sockets and starts carrying.
func newChannelRelay(dial channelDialer) (_ *channelRelay, err error) {
	dir, err := os.MkdirTemp("", "glassroom-k8s-")
	if err != nil {
		return nil, fmt.Errorf("k8s: channel relay: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("k8s: channel relay: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &channelRelay{dir: dir, dial: dial, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	defer func() {
		if err != nil {
			_ = r.Close()
		}
	}()
	info := r.connection("")
	for _, ch := range kernel.Channels {
		ln, err := net.Listen("unix", info.SocketPath(ch))
		if err != nil {
			return nil, fmt.Errorf("k8s: channel relay: %w", err)
		}
		r.lns = append(r.lns, ln)
	}
	for i, ch := range kernel.Channels {
		r.wg.Add(1)
		go r.accept(r.lns[i], ch)
	}
	return r, nil
}

// connection returns the ipc connection info of the relay's sockets with
// the session's key.
func (r *channelRelay) connection(key string) kernel.ConnectionInfo {
	info := kernel.NewIPCConnection(filepath.Join(r.dir, "kernel"))
	info.Key = key
	return info
}

func (r *channelRelay) accept(ln net.Listener, ch kernel.Channel) {
	defer r.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || r.ctx.Err() != nil {
				return
			}
			// Out of descriptors, say: ZeroMQ retries, so does this.
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go r.carry(c, ch)
	}
}

// carry connects one local connection to the kernel through a new tunnel;
// a tunnel that cannot be opened closes it (ZeroMQ reconnects).
func (r *channelRelay) carry(local net.Conn, ch kernel.Channel) {
	defer r.wg.Done()
	defer r.untrack(local)
	ctx, cancel := context.WithTimeout(r.ctx, channelDialTimeout)
	remote, err := r.dial(ctx, ch)
	cancel()
	if err != nil {
		local.Close()
		return
	}
	if !r.track(remote) {
		local.Close()
		remote.Close()
		return
	}
	defer r.untrack(remote)
	splice(local, remote)
}

func (r *channelRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *channelRelay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// Close stops accepting, ends every carried connection, waits for the
// relay's goroutines and removes the sockets. It may be called more than
// once.
func (r *channelRelay) Close() error {
	r.mu.Lock()
	r.cancel()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	for _, ln := range r.lns {
		ln.Close()
	}
	r.wg.Wait()
	return os.RemoveAll(r.dir)
}

// errChannelRefused: the agent answered a tunnel request with something
// other than 101.
var errChannelRefused = errors.New("k8s: the pod agent refused the kernel channel")

// dialAgentChannel opens one channel's tunnel to the agent at addr: TLS
// (conf), then the upgrade request with the token. The answer is read
// with a bound on its size; the caller owns the returned connection.
func dialAgentChannel(ctx context.Context, addr string, conf *tls.Config, token string, epoch int64, ch kernel.Channel) (net.Conn, error) {
	return dialAgent(ctx, addr, conf, token, epoch, channelPath+string(ch), string(ch))
}

// dialAgent opens the agent's tunnel at path (channelPath, contextPath
// or spawnPath), what names in errors. The connection's CloseWrite ends
// the gateway's side of the tunnel alone.
func dialAgent(ctx context.Context, addr string, conf *tls.Config, token string, epoch int64, path, what string) (net.Conn, error) {
	ch := what
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("k8s: channel %s: %w", ch, err)
	}
	conn := raw
	if conf != nil {
		tc := tls.Client(raw, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("k8s: channel %s: %w", ch, err)
		}
		conn = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + agentServerName + "\r\nAuthorization: Bearer " + token +
		"\r\n" + EpochHeader + ": " + strconv.FormatInt(epoch, 10) + "\r\nConnection: Upgrade\r\nUpgrade: " + channelUpgrade + "\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, fmt.Errorf("k8s: channel %s: %w", ch, err)
	}
	br := bufio.NewReaderSize(io.LimitReader(conn, 4096), 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("k8s: channel %s: %w", ch, err)
	}
	_ = resp.Body.Close() // none on a 101; a refusal's is bounded by br
	if isFenced(resp) {
		conn.Close()
		return nil, fmt.Errorf("%w (channel %s)", errFenced, ch)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), channelUpgrade) {
		conn.Close()
		return nil, fmt.Errorf("%w: %s: HTTP %d", errChannelRefused, ch, resp.StatusCode)
	}
	_ = conn.SetDeadline(time.Time{})
	// The kernel may have spoken already (ZMTP greets at once): what br
	// took past the answer comes first; br ends at its bound, then conn.
	return &bufferedConn{Conn: conn, r: io.MultiReader(br, conn)}, nil
}
