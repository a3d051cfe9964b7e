package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/cleanup"
	"github.com/glassroom/glassroom/kernel"
)

// Driver is what a runtime writes for one sandbox: how to start its kernel
// process and how to destroy what the runtime made for it. Base drives it.
type Driver interface {
	// Launch starts a kernel process serving the connection inc describes
	// (its connection file is ready in the ipc directory) and returns once
	// the process has started; Base then waits for its sockets. The driver
	// must call inc.Exit once the process is gone, from a goroutine it
	// owns and that Destroy waits for.
	Launch(ctx context.Context, inc *Incarnation) (Process, error)
	// Destroy removes what the driver made (a container). Base calls it
	// once, from Close, after killing the current process.
	Destroy(ctx context.Context) error
}

// Connector is implemented by a Driver whose kernels are not reached
// through unix sockets in a host ipc directory (a pod on the cluster
// network): Base asks it for each incarnation's connection instead of
// PrepareIPC, and to wait for that kernel instead of WaitForSockets. A
// sandbox whose driver is a Connector needs no Dirs (Use with nil dirs);
// its Workspace is then "".
type Connector interface {
	// Prepare returns how the gateway will reach the next kernel process.
	Prepare(ctx context.Context) (kernel.ConnectionInfo, error)
	// WaitReady blocks until the kernel of inc accepts connections. It
	// fails when inc exits first or ctx ends.
	WaitReady(ctx context.Context, inc *Incarnation) error
}

// Process is one started kernel process of a Driver.
type Process interface {
	// Kill ends the process; its incarnation's Exited closes once it is gone.
	Kill(ctx context.Context) error
	// Diagnostics returns the process's last output, to explain a failed start.
	Diagnostics() string
}

// BaseConfig describes one sandbox to NewBase.
type BaseConfig struct {
	ID     string
	Limits Limits
	// SandboxIPC is where the kernel sees the ipc directory (IPCDir), or ""
	// when it sees host paths (an unsandboxed local kernel).
	SandboxIPC string
	// StartTimeout bounds the wait for a new kernel's sockets.
	StartTimeout time.Duration
	// FreezeTimeout bounds each Freeze and Thaw of the driver (and the
	// thaw that undoes a failed freeze); 0: the driver bounds them itself.
	FreezeTimeout time.Duration
}

// Base implements Sandbox around a runtime's Driver: the accessors, the
// restart sequence (kill, wait, prepare the connection file, launch, wait
// for the sockets) and an idempotent Close that also runs the teardown
// steps the runtime registered with OnClose, last first. Its methods are
// safe for concurrent use; Close preempts a Restart in progress.
type Base struct {
	cfg      BaseConfig
	uid, gid int // own the connection file (the sandbox's host uid)
	dirs     *Dirs
	drv      Driver

	teardown cleanup.Stack // guarded by closeOnce

	mu      sync.Mutex
	inc     *Incarnation
	proc    Process
	closed  bool
	closing chan struct{} // closed when Close starts
	launchs sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	freezeMu sync.Mutex // serializes Freeze and Thaw
	frozen   bool
}

// closeWait bounds how long Close waits for a killed process to be gone.
const closeWait = 30 * time.Second

// NewBase returns a sandbox that is not running yet. The runtime's Start
// registers teardown steps with OnClose as it creates things, sets the
// owner and the driver, then calls Launch; deferring CloseOnFailure undoes
// it all if anything fails. These calls belong to the creating goroutine.
func NewBase(cfg BaseConfig) *Base {
	return &Base{cfg: cfg, closing: make(chan struct{})}
}

// OnClose registers a teardown step; Close runs them last first. Call it
// before Launch, from the goroutine creating the sandbox.
func (b *Base) OnClose(name string, undo func() error) { b.teardown.Push(name, undo) }

// CloseOnFailure is deferred by a runtime's Start, whose named error result
// it watches: a panic becomes an error, and on error the sandbox is closed
// (with a fresh bounded context: the caller's may be done).
func (b *Base) CloseOnFailure(ctx context.Context, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("sandbox: start %s: panic: %v (at %s)", b.cfg.ID, r, panicSite())
	}
	if *err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWait)
		defer cancel()
		if cerr := b.Close(cctx); cerr != nil {
			*err = errors.Join(*err, cerr)
		}
	}
}

// panicSite is where the panic being recovered happened ("file:line" of
// the first frame below the runtime's panic machinery), for the error that
// replaces it.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case strings.HasPrefix(f.Function, "runtime."):
			panicking = true
		case panicking:
			return filepath.Base(filepath.Dir(f.File)) + "/" + filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

// SetOwner sets the host uid and gid the sandbox runs as.
func (b *Base) SetOwner(uid, gid int) { b.uid, b.gid = uid, gid }

// Use sets the sandbox's directories and its driver; from then on Close
// calls the driver's Destroy.
func (b *Base) Use(dirs *Dirs, drv Driver) { b.dirs, b.drv = dirs, drv }

// Attach makes inc, served by proc, the current kernel without launching
// one: a runtime adopting a kernel another gateway started calls it
// instead of Launch. Restart and Close then treat it as their own.
func (b *Base) Attach(inc *Incarnation, proc Process) {
	b.mu.Lock()
	b.inc, b.proc = inc, proc
	b.mu.Unlock()
}

// Launch starts the first kernel and waits for its sockets.
func (b *Base) Launch(ctx context.Context) error { return b.launch(ctx) }

// DriverStater is implemented by drivers of persistent sandboxes: the
// driver's part of State, and the incarnation token of its current kernel.
type DriverStater interface {
	State() (driver json.RawMessage, incarnation string)
}

// Durable is a Base whose driver's sandboxes outlive the gateway (a
// DriverStater and DriverDetacher): it implements Persistent. A runtime
// returns Durable{b} instead of b only then, so that a sandbox that dies
// with the gateway (a local process) is never taken for one that can be
// detached and adopted.
type Durable struct{ *Base }

var _ Persistent = Durable{}

// State implements Persistent.
func (d Durable) State() State { return d.state() }

// Detach implements Persistent: the sandbox is let go, not closed; its
// teardown steps are not run (they belong to the gateway that adopts it).
func (d Durable) Detach(ctx context.Context) error { return d.detach(ctx) }

// state describes the sandbox, with its driver's part when the driver is
// a DriverStater.
func (b *Base) state() State {
	st := State{ID: b.cfg.ID, UID: b.uid, GID: b.gid, Limits: b.cfg.Limits, Conn: b.current().Connection()}
	if ds, ok := b.drv.(DriverStater); ok {
		st.Driver, st.Incarnation = ds.State()
	}
	return st
}

// DriverDetacher is implemented by drivers whose sandboxes outlive the
// gateway: Detach stops watching the kernel and leaves it running.
type DriverDetacher interface {
	Detach(ctx context.Context) error
}

// detach stops watching the kernel, leaving it running, and marks the
// sandbox closed without running its teardown steps.
func (b *Base) detach(ctx context.Context) error {
	var err error
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		close(b.closing)
		b.mu.Unlock()
		b.launchs.Wait()
		if terr := b.Thaw(ctx); terr != nil { // the next gateway must find it running
			err = terr
		}
		if dd, ok := b.drv.(DriverDetacher); ok {
			err = errors.Join(err, dd.Detach(ctx))
		}
		b.teardown.Release()
		b.closeErr = ErrClosed
	})
	return err
}

func (b *Base) launch(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.launchs.Add(1)
	b.mu.Unlock()
	defer b.launchs.Done()

	conn, isConnector := b.drv.(Connector)
	var host kernel.ConnectionInfo
	var err error
	if isConnector {
		host, err = conn.Prepare(ctx)
	} else {
		host, err = PrepareIPC(b.dirs.IPC(), b.cfg.SandboxIPC, b.uid, b.gid)
	}
	if err != nil {
		return err
	}
	inc := NewIncarnation(host)
	proc, err := b.drv.Launch(ctx, inc)
	if err != nil {
		return err
	}
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.inc, b.proc = inc, proc
	}
	b.mu.Unlock()
	if closed { // Close ran meanwhile
		b.kill(ctx, inc, proc)
		return ErrClosed
	}
	wctx, cancel := context.WithTimeout(ctx, b.cfg.StartTimeout)
	defer cancel()
	go func() { // ends the wait when Close starts; exits with launch
		select {
		case <-b.closing:
			cancel()
		case <-wctx.Done():
		}
	}()
	if isConnector {
		err = conn.WaitReady(wctx, inc)
	} else {
		err = WaitForSockets(wctx, host, inc.Exited())
	}
	if err != nil {
		b.kill(ctx, inc, proc)
		return fmt.Errorf("sandbox: %w (%s): %s", err, inc.ExitReason(), proc.Diagnostics())
	}
	return nil
}

// kill ends proc and waits, bounded, until it is gone.
func (b *Base) kill(ctx context.Context, inc *Incarnation, proc Process) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWait)
	defer cancel()
	_ = proc.Kill(ctx)
	select {
	case <-inc.Exited():
	case <-ctx.Done():
	}
}

func (b *Base) current() *Incarnation {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inc == nil { // never launched: behave as an exited kernel
		inc := NewIncarnation(kernel.ConnectionInfo{})
		inc.Exit("not started")
		return inc
	}
	return b.inc
}

// ID returns the session id.
func (b *Base) ID() string { return b.cfg.ID }

// Connection implements Sandbox.
func (b *Base) Connection() kernel.ConnectionInfo { return b.current().Connection() }

// Limits implements Sandbox.
func (b *Base) Limits() Limits { return b.cfg.Limits }

// Workspace implements Sandbox.
func (b *Base) Workspace() string {
	if b.dirs == nil {
		return ""
	}
	return b.dirs.Work()
}

// UID returns the host uid the sandbox runs as.
func (b *Base) UID() int { return b.uid }

// Exited implements Sandbox.
func (b *Base) Exited() <-chan struct{} { return b.current().Exited() }

// ExitReason implements Sandbox.
func (b *Base) ExitReason() string { return b.current().ExitReason() }

// Restart implements Sandbox: it kills the current process, waits until it
// is gone, and launches a fresh kernel in the same directories.
func (b *Base) Restart(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	inc, proc := b.inc, b.proc
	b.mu.Unlock()
	if err := b.Thaw(ctx); err != nil { // a frozen process cannot die
		return fmt.Errorf("sandbox: restart: %w", err)
	}
	if proc != nil {
		if err := proc.Kill(ctx); err != nil {
			return fmt.Errorf("sandbox: restart: kill: %w", err)
		}
		select {
		case <-inc.Exited():
		case <-ctx.Done():
			return fmt.Errorf("sandbox: restart: %w", ctx.Err())
		case <-b.closing:
			return ErrClosed
		}
	}
	if err := b.launch(ctx); err != nil {
		return fmt.Errorf("sandbox: restart: %w", err)
	}
	return nil
}

// Close implements Sandbox: it kills the kernel, waits for a launch in
// progress, destroys the driver's resources and runs the teardown steps.
// Errors are joined; later calls return the first call's result.
func (b *Base) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		close(b.closing)
		inc, proc := b.inc, b.proc
		b.mu.Unlock()
		_ = b.Thaw(context.WithoutCancel(ctx)) // a frozen process cannot die
		if proc != nil {
			b.kill(ctx, inc, proc)
		}
		b.launchs.Wait()
		var errs []error
		if b.drv != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeWait)
			if err := b.drv.Destroy(dctx); err != nil {
				errs = append(errs, err)
			}
			cancel()
		}
		if err := b.teardown.Run(); err != nil {
			errs = append(errs, err)
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// Freezer is what a session needs to pause an idle sandbox. Base
// implements it (Freeze returns ErrNoFreeze when its driver cannot).
type Freezer interface {
	Freeze(ctx context.Context) error
	Thaw(ctx context.Context) error
	Frozen() bool
}

var _ Freezer = (*Base)(nil)

// ErrNoFreeze is returned by Freeze when the sandbox's runtime cannot
// freeze it.
var ErrNoFreeze = errors.New("sandbox: this runtime cannot freeze a sandbox")

// DriverFreezer is implemented by drivers that can stop every process of
// the sandbox at once and resume them (a cgroup freezer, docker pause).
type DriverFreezer interface {
	Freeze(ctx context.Context) error
	Thaw(ctx context.Context) error
}

// ErrFreezeTimeout is returned (wrapped) by Freeze when the driver did
// not complete the freeze within BaseConfig.FreezeTimeout.
var ErrFreezeTimeout = errors.New("sandbox: the freeze did not complete in time")

// freezeContext bounds one freeze or thaw by FreezeTimeout, if set.
func (b *Base) freezeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.cfg.FreezeTimeout > 0 {
		return context.WithTimeout(ctx, b.cfg.FreezeTimeout)
	}
	return context.WithCancel(ctx)
}

// Freeze stops every process of the sandbox until Thaw: an idle kernel
// then costs no CPU. It returns ErrNoFreeze when the driver cannot.
// With BaseConfig.FreezeTimeout set it blocks at most twice that (the
// freeze, then the thaw that undoes a failed one). A freeze that fails
// or times out (ErrFreezeTimeout) is undone: the sandbox is left running
// and not Frozen (should the undo fail too, it counts as Frozen, so that
// the next Thaw, Restart, Close or Detach tries again). Restart, Close and Detach thaw first. Safe for concurrent use with Thaw; the caller must not expect
// the kernel to answer while frozen.
func (b *Base) Freeze(ctx context.Context) error {
	fz, ok := b.drv.(DriverFreezer)
	if !ok {
		return ErrNoFreeze
	}
	b.freezeMu.Lock()
	defer b.freezeMu.Unlock()
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case b.frozen:
		return nil
	}
	fctx, cancel := b.freezeContext(ctx)
	defer cancel()
	if err := fz.Freeze(fctx); err != nil {
		if errors.Is(fctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("%w (%v): %w", ErrFreezeTimeout, b.cfg.FreezeTimeout, err)
		}
		tctx, tcancel := b.freezeContext(context.WithoutCancel(ctx))
		defer tcancel()
		if terr := fz.Thaw(tctx); terr != nil { // never leave it half frozen
			// State unknown counts as frozen: every later use, Restart,
			// Close and Detach then tries the thaw again.
			b.frozen = true
			return fmt.Errorf("sandbox: freeze: %w (thawing it back: %w)", err, terr)
		}
		return fmt.Errorf("sandbox: freeze: %w", err)
	}
	b.frozen = true
	return nil
}

// Thaw resumes a frozen sandbox; it does nothing to one that is not. It
// waits for a Freeze in progress; its own call to the driver is bounded
// by FreezeTimeout when that is set.
func (b *Base) Thaw(ctx context.Context) error {
	b.freezeMu.Lock()
	defer b.freezeMu.Unlock()
	if !b.frozen {
		return nil
	}
	tctx, cancel := b.freezeContext(ctx)
	defer cancel()
	if err := b.drv.(DriverFreezer).Thaw(tctx); err != nil {
		return fmt.Errorf("sandbox: thaw: %w", err)
	}
	b.frozen = false
	return nil
}

// Frozen reports whether the sandbox is frozen now.
func (b *Base) Frozen() bool {
	b.freezeMu.Lock()
	defer b.freezeMu.Unlock()
	return b.frozen
}
