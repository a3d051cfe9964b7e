package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// StartContext implements sandbox.ContextStarter: one more kernel in the
// session's pod, started by the pod's supervisor like the first (the
// same container, uid, rlimits, cgroup and limits, the same start-up
// hardening: sandbox.KernelArgv), on an ipc directory of its own under
// sandbox.ContextsDir, whose channels the agent relays like the first
// kernel's. The kernel's output and its end come back on a spawn tunnel,
// whose end (a Kill, the gateway gone) makes the supervisor kill it.
//
// As on docker, a restart or the death of the pod's first kernel ends
// every context's kernel (the supervisor kills every process of the
// sandbox between generations); each context then reports its exit and
// starts again with its own Restart. A context does not survive its
// gateway: an adopting gateway finds the first kernel only.
func (s *podSandbox) StartContext(ctx context.Context, spec sandbox.ContextSpec) (sandbox.Sandbox, error) {
	spec, err := spec.Validate()
	if err != nil {
		return nil, err
	}
	if err := sandbox.CheckInstalled(s.d.r, spec.Kernel); err != nil {
		return nil, err
	}
	cfg := sandbox.BaseConfig{ID: s.ID(), Limits: s.Limits(), StartTimeout: s.d.r.cfg.StartTimeout}
	return s.ctxs.Start(ctx, spec.Name, cfg, func(b *sandbox.Base) error {
		b.Use(nil, &contextDriver{d: s.d, spec: spec})
		return nil
	})
}

// contextDriver runs one context's kernel (sandbox.Driver and
// sandbox.Connector): each incarnation a spawn of the pod's supervisor.
type contextDriver struct {
	d    *driver // the pod's
	spec sandbox.ContextSpec

	mu    sync.Mutex
	relay *channelRelay // made by the first Prepare, closed by Destroy
	wg    sync.WaitGroup
}

// Prepare implements sandbox.Connector: the context's channel relay.
func (x *contextDriver) Prepare(context.Context) (kernel.ConnectionInfo, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.relay == nil {
		r, err := newChannelRelay(x.dial)
		if err != nil {
			return kernel.ConnectionInfo{}, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
		}
		x.relay = r
	}
	return x.relay.connection(x.d.key), nil
}

// dial opens a tunnel to one of the context kernel's channels.
func (x *contextDriver) dial(ctx context.Context, ch kernel.Channel) (net.Conn, error) {
	d := x.d
	if d.tls == nil {
		return nil, fmt.Errorf("%w: k8s: no usable agent certificate for %s", sandbox.ErrUnavailable, d.name)
	}
	c, err := dialAgent(ctx, d.agentAddr(), d.tls, d.token, d.epoch.Load(), contextPath+x.spec.Name+"/channel/"+string(ch), x.spec.Name+" "+string(ch))
	return c, d.checkFenced(err)
}

// Launch implements sandbox.Driver: the supervisor starts the kernel,
// and a waiter reads its output until the supervisor's last line.
func (x *contextDriver) Launch(ctx context.Context, inc *sandbox.Incarnation) (sandbox.Process, error) {
	d := x.d
	first, err := d.running()
	if err != nil {
		return nil, err
	}
	conn, err := d.spawn(ctx, spawnRequest{Kind: "context", Name: x.spec.Name,
		Argv: sandbox.KernelArgv(d.r.cfg.Python, x.spec.Kernel, "{conn}"), Cwd: relativeCwd(x.spec.Cwd)})
	if err != nil {
		return nil, fmt.Errorf("k8s: start context %s: %w", x.spec.Name, err)
	}
	p := &contextProcess{x: x, inc: inc, first: first, conn: conn, out: &sandbox.TailBuffer{Max: 16 << 10}, killed: make(chan struct{})}
	x.wg.Add(1)
	go func() { // owned by the driver: Destroy waits for it; ends with the stream
		defer x.wg.Done()
		p.wait()
	}()
	return p, nil
}

// WaitReady implements sandbox.Connector: the kernel's five channels
// answer through the agent (each of its sockets accepts).
func (x *contextDriver) WaitReady(ctx context.Context, inc *sandbox.Incarnation) error {
	for {
		err := dialAll(ctx, x.dial)
		if err == nil {
			return nil
		}
		last := err.Error()
		select {
		case <-inc.Exited():
			return fmt.Errorf("%w: kernel exited during start: %s", sandbox.ErrUnavailable, inc.ExitReason())
		case <-ctx.Done():
			return fmt.Errorf("%w: kernel did not start: %s: %w", sandbox.ErrUnavailable, last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Destroy implements sandbox.Driver: the Base killed the process; wait
// for the waiter (bounded by ctx), then close the relay.
func (x *contextDriver) Destroy(ctx context.Context) error {
	done := make(chan struct{})
	go func() { x.wg.Wait(); close(done) }() // ends when the waiters do
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("k8s: waiting for context %s of %s to exit: %w", x.spec.Name, x.d.name, ctx.Err())
	}
	x.mu.Lock()
	relay := x.relay
	x.relay = nil
	x.mu.Unlock()
	if relay != nil {
		err = errors.Join(err, relay.Close())
	}
	return err
}

// contextProcess is one run of a context's kernel (sandbox.Process).
type contextProcess struct {
	x      *contextDriver
	inc    *sandbox.Incarnation
	first  *sandbox.Incarnation // the pod's first kernel when it started
	conn   net.Conn
	out    *sandbox.TailBuffer
	killed chan struct{}
	once   sync.Once
}

// killGrace is how long a killed context's supervisor has to report the
// kernel's end before its stream is closed.
const killGrace = 5 * time.Second

// Kill implements sandbox.Process: it ends the tunnel's writing, on which
// the supervisor kills the kernel's process group and reports it; the
// tunnel closes at once if that report does not come within killGrace.
func (p *contextProcess) Kill(context.Context) error {
	p.once.Do(func() {
		close(p.killed)
		if closeWrite(p.conn) != nil {
			p.conn.Close()
		}
	})
	return nil
}

// Diagnostics implements sandbox.Process: the kernel's last output.
func (p *contextProcess) Diagnostics() string { return p.out.String() }

// wait reads the stream until the supervisor's last line or its end, and
// reports why the kernel ended.
func (p *contextProcess) wait() {
	stop := make(chan struct{})
	defer close(stop)
	go func() { // owned by wait: ends with it
		select {
		case <-p.killed:
		case <-stop:
			return
		}
		select {
		case <-time.After(killGrace):
			p.conn.Close()
		case <-stop:
		}
	}()
	reason := p.read()
	p.conn.Close()
	switch {
	case sandbox.IsDone(p.killed):
		reason = "killed (a restart or close of the context)"
	case reason == "" || reason == killedWithSandbox || strings.HasPrefix(reason, "killed by signal 9"):
		// The supervisor kills every process between two generations of
		// the first kernel, and reports that before the gateway hears of
		// the generation's end: wait for it a little.
		if first, ok := p.firstEnded(settleWait); ok {
			reason = first
		} else if reason == "" {
			reason = "the connection to the pod's supervisor was lost"
		}
	}
	p.inc.Exit(reason)
}

// killedWithSandbox is the supervisor's reason for a context it could not
// reap itself: every process of the sandbox was killed.
const killedWithSandbox = "killed with every process of the sandbox"

// settleWait bounds how long a context killed with the sandbox waits to
// hear that the pod's first kernel ended.
const settleWait = 10 * time.Second

// firstEnded waits up to d for the pod's first kernel (the generation the
// context started beside) to be reported ended, and says what that did to
// the context.
func (p *contextProcess) firstEnded(d time.Duration) (string, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.first.Exited():
	case <-p.killed:
		return "killed (a restart or close of the context)", true
	case <-t.C:
		return "", false
	}
	if why := p.first.ExitReason(); why != "stopped" && why != "replaced by a newer kernel" {
		return "the sandbox stopped: its first kernel ended (" + why + "), and with it the kernels of all its contexts", true
	}
	return "the sandbox's first kernel restarted, which ended the kernels of all its contexts: restart this context", true
}

// read copies the stream to the tail until the supervisor's last line
// (TRAILER, then JSON), whose reason it returns, or the stream's end ("").
// The trailer is searched across reads; everything before it is output.
func (p *contextProcess) read() string {
	trailer := []byte(trailerMark)
	var pending []byte // what might be the start of the trailer
	buf := make([]byte, 32<<10)
	for {
		n, err := p.conn.Read(buf)
		pending = append(pending, buf[:n]...)
		if i := bytes.Index(pending, trailer); i >= 0 {
			_, _ = p.out.Write(pending[:i])
			rest := pending[i+len(trailer):]
			// The last line is short: read what remains of it, bounded in
			// size and time (a process that left the kernel's group may
			// hold the stream open).
			_ = p.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			more, _ := io.ReadAll(io.LimitReader(p.conn, 1024))
			rest = append(rest, more...)
			var t struct {
				Reason string `json:"reason"`
			}
			if line, _, _ := bytes.Cut(rest, []byte("\n")); json.Unmarshal(line, &t) == nil && t.Reason != "" {
				return sanitize(t.Reason, 200)
			}
			return "exited"
		}
		if keep := len(trailer) - 1; len(pending) > keep {
			_, _ = p.out.Write(pending[:len(pending)-keep])
			pending = append(pending[:0], pending[len(pending)-keep:]...)
		}
		if err != nil {
			_, _ = p.out.Write(pending)
			return ""
		}
	}
}

// trailerMark begins the supervisor's last line on a context's stream
// (TRAILER in supervisor.py).
const trailerMark = "\n\x00glassroom-exit "
