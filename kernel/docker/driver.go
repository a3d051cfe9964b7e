package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-units"
	"github.com/glassroom/glassroom/kernel/sandbox"
)

// driver runs one session's container (sandbox.Driver). The container is
// created once; each kernel incarnation is a start of it.
type driver struct {
	r      *Runtime
	id     string
	name   string
	limits sandbox.Limits
	dirs   *sandbox.Dirs
	uid    int
	egress string // host path of the egress proxy's socket, "" for none

	mu          sync.Mutex
	containerID string
	waits       []context.CancelFunc // end the waiters' ContainerWait
	wg          sync.WaitGroup       // waiter goroutines
}

// create creates the locked-down container.
func (d *driver) create(ctx context.Context, env map[string]string) error {
	cfg := d.r.cfg
	envList := make([]string, 0, len(env))
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	pids := int64(d.limits.Pids)
	mem := int64(d.limits.MemoryMB) << 20
	secOpt := []string{"no-new-privileges"}
	if d.r.seccomp != "" {
		secOpt = append(secOpt, "seccomp="+d.r.seccomp)
	}
	oomScore := 1000 // the kernel, never the gateway, is the OOM killer's first choice
	cc := &container.Config{
		Image:           cfg.Image,
		Entrypoint:      []string{"/usr/bin/tini", "--"},
		Cmd:             sandbox.KernelArgv("/usr/bin/python3"),
		User:            fmt.Sprintf("%d:%d", d.uid, d.uid),
		WorkingDir:      sandbox.WorkDir,
		Env:             envList,
		Hostname:        "glassroom",
		NetworkDisabled: true,
		Labels:          map[string]string{LabelManaged: "true", LabelInstance: cfg.Instance, LabelSession: d.id},
	}
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    secOpt,
		IpcMode:        "private",
		ShmSize:        64 << 20,
		OomScoreAdj:    oomScore,
		Runtime:        cfg.OCIRuntime,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=256m,mode=1777"},
		Binds: []string{
			d.dirs.IPC() + ":" + sandbox.IPCDir + ":rw",
			d.dirs.Work() + ":" + sandbox.WorkDir + ":rw",
		},
		// The kernel's own stdout/stderr (not Jupyter output): bounded, so
		// the code cannot fill the host's disk through the engine's logs.
		LogConfig: container.LogConfig{Type: "json-file", Config: map[string]string{
			"max-size": strconv.Itoa(cfg.LogMaxBytes), "max-file": "1"}},
		Resources: container.Resources{
			Memory:     mem,
			MemorySwap: mem,
			NanoCPUs:   int64(d.limits.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: int64(cfg.NoFile), Hard: int64(cfg.NoFile)},
				{Name: "nproc", Soft: pids, Hard: pids},
				{Name: "fsize", Soft: int64(cfg.FileSizeMB) << 20, Hard: int64(cfg.FileSizeMB) << 20},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	if d.egress != "" { // read-only: the kernel can connect to the socket, not replace it
		hc.Binds = append(hc.Binds, filepath.Dir(d.egress)+":"+sandbox.EgressDir+":ro")
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	resp, err := d.r.cli.ContainerCreate(cctx, cc, hc, nil, nil, d.name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: docker: image %s not found: %w", sandbox.ErrUnavailable, cfg.Image, err)
		}
		return fmt.Errorf("%w: docker: create container: %w", sandbox.ErrUnavailable, err)
	}
	d.mu.Lock()
	d.containerID = resp.ID
	d.mu.Unlock()
	return nil
}

// Launch implements sandbox.Driver: it starts the container and a waiter
// that reports the exit.
func (d *driver) Launch(ctx context.Context, inc *sandbox.Incarnation) (sandbox.Process, error) {
	cfg := d.r.cfg
	// Wait is registered before the start so no exit is missed. It is the
	// one Docker call without a deadline: it lasts as long as the kernel.
	wctx, wcancel := context.WithCancel(context.Background())
	d.mu.Lock()
	id := d.containerID
	d.waits = append(d.waits, wcancel)
	d.mu.Unlock()
	waitC, errC := d.r.cli.ContainerWait(wctx, id, container.WaitConditionNextExit)
	sctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	err := d.r.cli.ContainerStart(sctx, id, container.StartOptions{})
	cancel()
	if err != nil {
		wcancel()
		return nil, fmt.Errorf("%w: docker: start container: %w", sandbox.ErrUnavailable, err)
	}
	d.wg.Add(1)
	go func() { // owned by the driver; ends when the container exits or Destroy cancels the wait
		defer d.wg.Done()
		defer wcancel()
		select {
		case res := <-waitC:
			inc.Exit(d.exitReason(res.StatusCode))
		case err := <-errC:
			if wctx.Err() != nil {
				inc.Exit("sandbox closed")
			} else {
				inc.Exit("wait failed: " + err.Error())
			}
		}
	}()
	return &process{d: d, id: id}, nil
}

// exitReason inspects the exited container: OOMKilled when the OOM killer
// ended it, else the exit code.
func (d *driver) exitReason(code int64) string {
	ctx, cancel := context.WithTimeout(context.Background(), d.r.cfg.CallTimeout)
	defer cancel()
	info, err := d.r.cli.ContainerInspect(ctx, d.containerID)
	if err == nil && info.State != nil && info.State.OOMKilled {
		return "OOMKilled: the kernel exceeded its memory limit of " + strconv.Itoa(d.limits.MemoryMB) + " MB"
	}
	return "exit code " + strconv.FormatInt(code, 10)
}

// Destroy implements sandbox.Driver: it force-removes the container, even
// with a done ctx (one retry), ends the waits and waits for the waiters.
func (d *driver) Destroy(ctx context.Context) error {
	d.mu.Lock()
	id := d.containerID
	d.mu.Unlock()
	var err error
	if id != "" {
		for try := 0; try < 2; try++ {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.r.cfg.CallTimeout)
			err = d.r.cli.ContainerRemove(cctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
			cancel()
			if err == nil || cerrdefs.IsNotFound(err) {
				err = nil
				break
			}
		}
	}
	d.mu.Lock()
	for _, stop := range d.waits {
		stop() // if removal failed, reconcile removes the container later
	}
	d.mu.Unlock()
	d.wg.Wait()
	if err != nil {
		return fmt.Errorf("docker: remove container %s: %w", d.name, err)
	}
	return nil
}

// process is one start of the container (sandbox.Process).
type process struct {
	d  *driver
	id string
}

// Kill implements sandbox.Process. A container that is not running
// already (a conflict) is fine.
func (p *process) Kill(ctx context.Context) error {
	kctx, cancel := context.WithTimeout(ctx, p.d.r.cfg.CallTimeout)
	defer cancel()
	err := p.d.r.cli.ContainerKill(kctx, p.id, "KILL")
	if err != nil && !cerrdefs.IsConflict(err) && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: kill %s: %w", p.d.name, err)
	}
	return nil
}

// Diagnostics implements sandbox.Process: the last lines of the
// container's output.
func (p *process) Diagnostics() string {
	ctx, cancel := context.WithTimeout(context.Background(), p.d.r.cfg.CallTimeout)
	defer cancel()
	rc, err := p.d.r.cli.ContainerLogs(ctx, p.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	buf := make([]byte, 8<<10)
	n, err := io.ReadFull(rc, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return ""
	}
	return strings.ToValidUTF8(string(buf[:n]), "?")
}
