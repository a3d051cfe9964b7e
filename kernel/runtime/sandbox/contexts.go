package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/workspace"
)

// ErrContextExists is returned (wrapped) by StartContext for a name that
// a live context of the sandbox already has.
var ErrContextExists = errors.New("sandbox: a context of that name is running")

// MaxContexts is how many contexts a sandbox holds at once (their ipc
// directories share a small tmpfs, Dirs.Contexts); StartContext refuses
// one more with a *SpecError. The session's pids limit usually allows
// fewer kernels: a python3 kernel takes about 11.
const MaxContexts = 64

// Contexts is the set of one sandbox's contexts, for a runtime whose
// sandboxes implement ContextStarter. Each context is a Base of its own
// (one kernel process: its connection, exit, restart and close) around a
// Driver the runtime gives for it; the set refuses a second live context
// of one name, refuses new ones once closed (ErrClosed), and closes the
// ones it has when the sandbox closes.
//
// A context is handed out as a Sandbox with Sandbox's methods only: it is
// no Freezer, since freezing is the sandbox's (all its kernels at once).
// Its start, Restart and Close thaw the sandbox first (a frozen process
// cannot start or die). Its ID, Limits and Workspace are the sandbox's.
//
// Its methods are safe for concurrent use.
type Contexts struct {
	sandbox Freezer // the sandbox: thawed before a context starts or dies

	mu     sync.Mutex
	closed bool
	live   map[string]*Base // by name, starting ones included
	setups sync.WaitGroup   // setups in progress (Close waits for them)
}

// NewContexts returns the empty set of contexts of sb, the sandbox they
// run in (nil when it cannot freeze).
func NewContexts(sb Freezer) *Contexts {
	return &Contexts{sandbox: sb, live: map[string]*Base{}}
}

// Start starts the context name: a Base with cfg (the sandbox's ID,
// Limits and StartTimeout; SandboxIPC where the context's kernel sees its
// ipc directory), which setup prepares as a runtime's Start does (OnClose,
// SetOwner, Use with the context's Dirs and driver) without blocking; Start
// then thaws the sandbox and launches the kernel, blocking until its
// sockets accept (or ctx ends, or StartTimeout passes). On failure what
// setup registered is undone. It fails with ErrClosed once Close has
// begun, with ErrContextExists while a context of that name lives, and
// with a *SpecError while MaxContexts live.
// The caller must Close the result; Close of the set closes it too.
func (c *Contexts) Start(ctx context.Context, name string, cfg BaseConfig, setup func(b *Base) error) (_ Sandbox, err error) {
	b := NewBase(cfg)
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, ErrClosed
	case c.live[name] != nil:
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrContextExists, name)
	case len(c.live) >= MaxContexts:
		c.mu.Unlock()
		return nil, badSpec("a sandbox holds at most %d contexts", MaxContexts)
	}
	c.live[name] = b
	c.setups.Add(1)
	c.mu.Unlock()
	// Registered first, so it runs last: the name is free again only once
	// everything of this context (its ipc directory) is gone.
	b.OnClose("forget context", func() error { c.forget(name, b); return nil })
	defer func() { // runs after CloseOnFailure
		if err != nil && c.isClosed() && !errors.Is(err, ErrClosed) {
			err = fmt.Errorf("%w (while the context started: %w)", ErrClosed, err)
		}
	}()
	defer b.CloseOnFailure(ctx, &err)
	err = c.setup(b, setup)
	if err != nil {
		return nil, err
	}
	if c.sandbox != nil {
		if err := c.sandbox.Thaw(ctx); err != nil {
			return nil, fmt.Errorf("sandbox: start context %s: %w", name, err)
		}
	}
	if err := b.Launch(ctx); err != nil {
		return nil, fmt.Errorf("sandbox: start context %s: %w", name, err)
	}
	return &contextSandbox{b: b, sandbox: c.sandbox}, nil
}

// setup runs the runtime's setup of b, then lets Close at it.
func (c *Contexts) setup(b *Base, setup func(b *Base) error) error {
	defer c.setups.Done()
	return setup(b)
}

func (c *Contexts) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// forget frees name, if b still has it.
func (c *Contexts) forget(name string, b *Base) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[name] == b {
		delete(c.live, name)
	}
}

// Len returns how many contexts live (starting ones included).
func (c *Contexts) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.live)
}

// Close refuses new contexts from now on and closes every context, those
// starting too, all at once (it thaws the sandbox first); it returns when
// they are closed, with their errors joined. The sandbox's Close (and
// Detach) calls it before its own. Later calls close nothing more.
func (c *Contexts) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.setups.Wait() // a Base is closed only once its runtime has set it up
	c.mu.Lock()
	bases := make([]*Base, 0, len(c.live))
	for _, b := range c.live {
		bases = append(bases, b)
	}
	c.mu.Unlock()
	if len(bases) == 0 {
		return nil
	}
	var errs []error
	if c.sandbox != nil {
		if err := c.sandbox.Thaw(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: close contexts: %w", err))
		}
	}
	results := make([]error, len(bases))
	var wg sync.WaitGroup
	for i, b := range bases {
		wg.Add(1)
		go func() { // owned by Close, which waits for it
			defer wg.Done()
			results[i] = b.Close(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, results...)...)
}

// contextSandbox is a context as the caller sees it: a Sandbox and
// nothing more (no Freezer).
type contextSandbox struct {
	b       *Base
	sandbox Freezer
}

func (s *contextSandbox) ID() string                        { return s.b.ID() }
func (s *contextSandbox) Connection() kernel.ConnectionInfo { return s.b.Connection() }
func (s *contextSandbox) Limits() Limits                    { return s.b.Limits() }
func (s *contextSandbox) Workspace() string                 { return s.b.Workspace() }
func (s *contextSandbox) Exited() <-chan struct{}           { return s.b.Exited() }
func (s *contextSandbox) ExitReason() string                { return s.b.ExitReason() }

// Restart implements Sandbox: it thaws the sandbox, then restarts this
// context's kernel alone.
func (s *contextSandbox) Restart(ctx context.Context) error {
	if s.sandbox != nil {
		if err := s.sandbox.Thaw(ctx); err != nil {
			return fmt.Errorf("sandbox: restart context: %w", err)
		}
	}
	return s.b.Restart(ctx)
}

// Close implements Sandbox: it thaws the sandbox, then ends this context's
// kernel and removes what was made for it; the sandbox and its other
// kernels run on.
func (s *contextSandbox) Close(ctx context.Context) error {
	if s.sandbox != nil {
		_ = s.sandbox.Thaw(context.WithoutCancel(ctx)) // Base.Close bounds its wait for a kernel that cannot die
	}
	return s.b.Close(ctx)
}

// CheckCwd reports, as a *SpecError, a context's working directory cwd
// (ContextSpec.Cwd, canonical) that is not a directory of the workspace
// whose host path is workDir. Symlinks are not followed (one on the way
// is refused), so the check never leaves the workspace.
func CheckCwd(workDir, cwd string) error {
	if cwd == WorkDir {
		return nil
	}
	root, err := workspace.Open(workDir)
	if err != nil {
		return fmt.Errorf("sandbox: context cwd: %w", err)
	}
	defer func() { _ = root.Close() }()
	e, err := root.Stat(cwd)
	var pe *workspace.PathError
	switch {
	case errors.As(err, &pe):
		return badSpec("cwd %s: %s", cwd, pe.Kind)
	case err != nil:
		return fmt.Errorf("sandbox: context cwd: %w", err)
	case e.Type != "dir":
		return badSpec("cwd %s: not a directory", cwd)
	}
	return nil
}

// SharedEgressEnv is the environment that points a kernel at the egress
// forwarder another kernel's launcher already runs in the same network
// namespace (a context of a container; see EgressSocketEnv): the
// launcher starts none (its socket variable is empty, since a second one
// could not listen on the same port) and the proxy variables are set as
// the first launcher sets them.
func SharedEgressEnv() map[string]string {
	url := "http://127.0.0.1:" + strconv.Itoa(EgressProxyPort)
	return map[string]string{
		EgressSocketEnv: "",
		"HTTP_PROXY":    url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
	}
}

// CheckInstalled reports, as a *SpecError, a kernel (a canonical name)
// that rt cannot start: one its KernelLister does not list, or, for a
// runtime without one, any but DefaultKernel.
func CheckInstalled(rt any, kernel string) error {
	installed := []KernelSpec{{Name: DefaultKernel}}
	if kl, ok := rt.(KernelLister); ok {
		installed = kl.Installed()
	}
	for _, k := range installed {
		if k.Name == kernel {
			return nil
		}
	}
	return badSpec("kernel %q is not installed", kernel)
}
