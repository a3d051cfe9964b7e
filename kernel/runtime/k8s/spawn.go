package k8s

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// spawnRequest is one request to the supervisor's spawn socket
// (supervisor.py), carried by the agent's spawnPath tunnel.
type spawnRequest struct {
	Kind string            `json:"kind"` // "context", "command" or "kill"
	Name string            `json:"name,omitempty"`
	Argv []string          `json:"argv,omitempty"`
	Cwd  string            `json:"cwd"` // relative to sandbox.WorkDir
	Env  map[string]string `json:"env,omitempty"`
	PGID int               `json:"pgid,omitempty"`
}

// spawnAnswer is the supervisor's first line on a spawn connection.
type spawnAnswer struct {
	OK    bool        `json:"ok"`
	Error string      `json:"error"`
	Usage usageReport `json:"usage"` // "usage" only
}

// usageReport is the supervisor's report of the kernel container's
// cgroup (the sandbox writes it: every number is checked).
type usageReport struct {
	CPUNanos int64 `json:"cpu_nanos"`
	MemUsed  int64 `json:"mem_used"`
	MemLimit int64 `json:"mem_limit"`
	Runnable int   `json:"runnable"`
}

// maxSpawnAnswer bounds the answer line (the sandbox writes it).
const maxSpawnAnswer = 4096

// errSpawnRefused: the supervisor refused a request (a cwd that is not a
// directory, say). It comes wrapped in a *sandbox.SpecError.
var errSpawnRefused = errors.New("k8s: the pod's supervisor refused")

// relativeCwd returns cwd (sandbox.WorkDir or under it, canonical) as the
// supervisor takes it: relative to the workspace.
func relativeCwd(cwd string) string {
	if cwd == sandbox.WorkDir {
		return ""
	}
	return strings.TrimPrefix(cwd, sandbox.WorkDir+"/")
}

// spawn sends req to the pod's supervisor through the agent and returns
// the connection after the supervisor's answer: the process's stream from
// then on. ctx bounds the request and the answer, not the stream. A
// refusal is a *sandbox.SpecError; the caller closes the connection.
func (d *driver) spawn(ctx context.Context, req spawnRequest) (net.Conn, error) {
	conn, _, err := d.request(ctx, req)
	return conn, err
}

// ask sends req to the pod's supervisor and returns its answer; the
// connection ends there.
func (d *driver) ask(ctx context.Context, req spawnRequest) (spawnAnswer, error) {
	conn, ans, err := d.request(ctx, req)
	if err != nil {
		return spawnAnswer{}, err
	}
	conn.Close()
	return ans, nil
}

// request is spawn, which returns the answer too.
func (d *driver) request(ctx context.Context, req spawnRequest) (net.Conn, spawnAnswer, error) {
	if d.tls == nil {
		return nil, spawnAnswer{}, fmt.Errorf("%w: k8s: no usable agent certificate for %s", sandbox.ErrUnavailable, d.name)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, spawnAnswer{}, fmt.Errorf("k8s: spawn: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, d.r.cfg.CallTimeout)
	defer cancel()
	conn, err := dialAgent(cctx, d.agentAddr(), d.tls, d.token, d.epoch.Load(), spawnPath, "spawn")
	if err = d.checkFenced(err); err != nil {
		return nil, spawnAnswer{}, fmt.Errorf("%w: k8s: %s: %w", sandbox.ErrUnavailable, req.Kind, err)
	}
	stop := context.AfterFunc(cctx, func() { conn.Close() }) // the answer is bounded by ctx too
	br := bufio.NewReaderSize(conn, maxSpawnAnswer)
	ans, err := func() (spawnAnswer, error) {
		if _, err := conn.Write(append(body, '\n')); err != nil {
			return spawnAnswer{}, err
		}
		line, err := br.ReadSlice('\n')
		if err != nil {
			return spawnAnswer{}, fmt.Errorf("no answer: %w", err)
		}
		var a spawnAnswer
		if err := json.Unmarshal(line, &a); err != nil {
			return spawnAnswer{}, fmt.Errorf("answer: %w", err)
		}
		return a, nil
	}()
	if !stop() {
		err = errors.Join(err, cctx.Err())
	}
	if err != nil {
		conn.Close()
		return nil, spawnAnswer{}, fmt.Errorf("%w: k8s: %s: %w", sandbox.ErrUnavailable, req.Kind, err)
	}
	if !ans.OK {
		conn.Close()
		return nil, spawnAnswer{}, &sandbox.SpecError{Reason: fmt.Sprintf("%v: %s", errSpawnRefused, sanitize(ans.Error, 300))}
	}
	return &bufferedConn{Conn: conn, r: br}, ans, nil
}

// killGroup asks the supervisor to kill process group pgid (a command's
// whose launcher is stuck). Errors are the caller's to ignore: the group
// may be gone.
func (d *driver) killGroup(pgid int) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.r.cfg.CallTimeout)
	defer cancel()
	_, err := d.ask(ctx, spawnRequest{Kind: "kill", PGID: pgid})
	return err
}

// Freeze implements sandbox.DriverFreezer: the supervisor stops every
// process of the kernel container (SIGSTOP: a pod has no cgroup freezer
// it may write) and answers once none runs.
func (d *driver) Freeze(ctx context.Context) error {
	if _, err := d.ask(ctx, spawnRequest{Kind: "freeze"}); err != nil {
		return fmt.Errorf("k8s: freeze %s: %w", d.name, err)
	}
	return nil
}

// Thaw implements sandbox.DriverFreezer: SIGCONT to them all.
func (d *driver) Thaw(ctx context.Context) error {
	if _, err := d.ask(ctx, spawnRequest{Kind: "thaw"}); err != nil {
		return fmt.Errorf("k8s: thaw %s: %w", d.name, err)
	}
	return nil
}

// Usage implements sandbox.DriverUsage: the kernel container's cgroup as
// the supervisor reads it (figures the sandbox could forge about itself
// only, bounded).
func (d *driver) Usage(ctx context.Context) (sandbox.Usage, error) {
	ans, err := d.ask(ctx, spawnRequest{Kind: "usage"})
	if err != nil {
		return sandbox.Usage{}, fmt.Errorf("%w: k8s: usage of %s: %w", sandbox.ErrNoUsage, d.name, err)
	}
	u := ans.Usage
	return sandbox.Usage{CPUNanos: uint64(max(u.CPUNanos, 0)), MemUsed: max(u.MemUsed, 0), MemLimit: max(u.MemLimit, 0),
		Runnable: min(max(u.Runnable, 0), 1<<20)}, nil
}

// closeWrite ends the gateway's side of a spawn connection: the process's
// stdin ends (a command) or the supervisor kills it (a context).
func closeWrite(c net.Conn) error {
	if hc, ok := c.(halfCloser); ok {
		return hc.CloseWrite()
	}
	return c.Close()
}

// streamWriter is a spawn connection's writing half: Close ends it alone.
type streamWriter struct{ c net.Conn }

func (w streamWriter) Write(p []byte) (int, error) { return w.c.Write(p) }
func (w streamWriter) Close() error                { return closeWrite(w.c) }

var _ io.WriteCloser = streamWriter{}
