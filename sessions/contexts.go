package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/cleanup"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// FirstContext is the id of a session's first context: the kernel the
// session was created with.
const FirstContext = "default"

// ContextInfo describes one context of a session: one kernel, with its own
// language, working directory and variables.
type ContextInfo struct {
	ID string `json:"id"`
	// Language is the kernel's canonical name (sandbox.KernelSpec.Name).
	Language string `json:"language"`
	// Cwd is the kernel's working directory inside the sandbox.
	Cwd   string `json:"cwd"`
	State State  `json:"state"`
	// Default: the context a request naming only this language runs in.
	Default bool `json:"default"`
}

// Contexts are the kernels of one session: its first (FirstContext), and
// those started since in the same sandbox (sandbox.ContextStarter), each
// a Kernel of its own (its queue, worker and Jupyter bookkeeping) sharing
// the session's sandbox, workspace, event log, idle pause and activity.
// Its methods are safe for concurrent use. Starting a context blocks for
// the kernel's start (about as long as a new session's); the others never
// block on a kernel.
//
// Lock order: Session.mu, then Contexts.mu, then a Kernel's mu (busy,
// from the session's expired).
type Contexts struct {
	s     *Session
	first *Kernel

	mu       sync.Mutex
	byID     map[string]*Kernel       // the first context is not in it
	defaults map[string]string        // kernel name → the id of its default context
	pending  map[string]chan struct{} // kernel name → closed when its default context's start ends
	starting int                      // contexts being started (they count toward the limit)
	closed   bool
	// installed are the kernels the runtime can start.
	installed []sandbox.KernelSpec
}

func newContexts(s *Session, installed []sandbox.KernelSpec) *Contexts {
	c := &Contexts{s: s, first: s.first, byID: map[string]*Kernel{}, defaults: map[string]string{},
		pending: map[string]chan struct{}{}, installed: installed}
	c.defaults[s.first.kernel] = FirstContext
	return c
}

// Errors of contexts.
var (
	// ErrContextNotFound: no context of that id in the session.
	ErrContextNotFound = errors.New("sessions: context not found")
	// ErrNoContexts: the session's runtime holds one kernel per sandbox.
	ErrNoContexts = errors.New("sessions: this runtime runs one kernel per session")
)

// ResolveKernel returns the canonical kernel name for a client's language
// name (a kernelspec name or an alias such as E2B's "js" and "ts"), and
// checks the runtime has it installed; the error is an *InvalidError that
// says which are. "" is sandbox.DefaultKernel.
func (m *Manager) ResolveKernel(language string) (string, error) {
	return resolveKernel(language, m.InstalledKernels())
}

func resolveKernel(language string, installed []sandbox.KernelSpec) (string, error) {
	if language == "" {
		return sandbox.DefaultKernel, nil
	}
	k, ok := sandbox.LookupKernel(language)
	if !ok {
		return "", invalid("unknown language %q (one of: %s)", language, kernelNames(sandbox.Kernels()))
	}
	for _, in := range installed {
		if in.Name == k.Name {
			return k.Name, nil
		}
	}
	return "", invalid("%s is not installed on this gateway (installed: %s)", k.Name, kernelNames(installed))
}

// InstalledKernels returns the kernels the runtime can start, the default
// first (sandbox.KernelLister; a runtime without it runs only the default).
//
// Config.Kernels, when set, leaves out every other kernel.
func (m *Manager) InstalledKernels() []sandbox.KernelSpec {
	var all []sandbox.KernelSpec
	if kl, ok := m.rt.(sandbox.KernelLister); ok {
		all = kl.Installed()
	} else {
		k, _ := sandbox.LookupKernel(sandbox.DefaultKernel)
		all = []sandbox.KernelSpec{k}
	}
	if len(m.cfg.Kernels) == 0 {
		return all
	}
	offered := map[string]bool{}
	for _, n := range m.cfg.Kernels {
		if k, ok := sandbox.LookupKernel(n); ok {
			offered[k.Name] = true
		}
	}
	out := all[:0]
	for _, k := range all {
		if offered[k.Name] {
			out = append(out, k)
		}
	}
	return out
}

func kernelNames(ks []sandbox.KernelSpec) string {
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ", "
		}
		s += k.Name
	}
	return s
}

// Name returns the canonical name of the kernel (sandbox.KernelSpec.Name).
func (s *Kernel) Name() string { return s.kernel }

// List describes every context, the first first, then by id.
func (c *Contexts) List() []ContextInfo {
	c.mu.Lock()
	out := []ContextInfo{c.infoLocked(FirstContext, c.first)}
	for id, k := range c.byID {
		out = append(out, c.infoLocked(id, k))
	}
	c.mu.Unlock()
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].ID < out[1+j].ID })
	for i := range out { // after c.mu: a session's lock comes before it
		k, err := c.Get(out[i].ID)
		if err != nil {
			out[i].State = StateDead
			continue
		}
		out[i].State = k.State()
	}
	return out
}

// infoLocked describes context id but its state. Called with c.mu held.
func (c *Contexts) infoLocked(id string, s *Kernel) ContextInfo {
	return ContextInfo{ID: id, Language: s.kernel, Cwd: s.cwd, Default: c.defaults[s.kernel] == id}
}

// Get returns the kernel of context id (FirstContext or "": the first).
func (c *Contexts) Get(id string) (*Kernel, error) {
	if id == FirstContext || id == "" {
		return c.first, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.byID[id]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrContextNotFound, id)
}

// Resolve finds where a request runs: in context id when it names one, in
// the default context of language when it names only that (started on
// first use, which blocks for the kernel's start), else in the first
// context. A context and a language that disagree are an *InvalidError.
func (c *Contexts) Resolve(ctx context.Context, id, language string) (*Kernel, error) {
	if id != "" {
		s, err := c.Get(id)
		if err != nil {
			return nil, err
		}
		if language != "" {
			k, ok := sandbox.LookupKernel(language)
			if !ok || k.Name != s.kernel {
				return nil, invalid("context %s runs %s, not %s", id, s.kernel, language)
			}
		}
		return s, nil
	}
	if language == "" {
		return c.first, nil
	}
	kernel, err := resolveKernel(language, c.installed)
	if err != nil {
		return nil, err
	}
	for {
		c.mu.Lock()
		if did, ok := c.defaults[kernel]; ok {
			c.mu.Unlock()
			return c.Get(did)
		}
		wait, starting := c.pending[kernel]
		if !starting { // this call starts it; the others wait for it
			done := make(chan struct{})
			c.pending[kernel] = done
			c.mu.Unlock()
			info, err := c.start(ctx, kernel, "", true)
			c.mu.Lock()
			delete(c.pending, kernel)
			close(done)
			c.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return c.Get(info.ID)
		}
		c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("sessions: waiting for the %s context: %w", kernel, ctx.Err())
		}
	}
}

// Create starts a new context running language (a name or alias) in cwd
// ("" is the workspace; a path relative to it, or absolute under it). It
// blocks for the kernel's start.
func (c *Contexts) Create(ctx context.Context, language, cwd string) (ContextInfo, error) {
	kernel, err := resolveKernel(language, c.installed)
	if err != nil {
		return ContextInfo{}, err
	}
	return c.start(ctx, kernel, cwd, false)
}

// start starts a context; asDefault makes it its language's default
// (Resolve lets one such start run per language at a time).
func (c *Contexts) start(ctx context.Context, kernel, cwd string, asDefault bool) (_ ContextInfo, err error) {
	first := c.s
	cs, ok := first.sandbox.(sandbox.ContextStarter)
	if !ok {
		return ContextInfo{}, fmt.Errorf("%w (%s)", ErrNoContexts, first.runtime)
	}
	id := newContextID(kernel)
	spec, err := sandbox.ContextSpec{Name: id, Kernel: kernel, Cwd: cwd}.Validate()
	if err != nil {
		var se *sandbox.SpecError
		if errors.As(err, &se) {
			return ContextInfo{}, &InvalidError{Reason: se.Public(), Err: err}
		}
		return ContextInfo{}, err
	}
	if rel, ok := strings.CutPrefix(spec.Cwd, sandbox.WorkDir+"/"); ok {
		// The kernel starts there: made (with its parents) in the
		// workspace, under the workspace's path rules (no symlinks).
		if err := first.files.MakeDir(rel); err != nil {
			return ContextInfo{}, fmt.Errorf("sessions: context cwd: %w", err)
		}
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return ContextInfo{}, ErrClosed
	case len(c.byID)+c.starting+1 >= first.cfg.MaxContexts:
		c.mu.Unlock()
		return ContextInfo{}, fmt.Errorf("%w: a session holds at most %d contexts", ErrTooManyContexts, first.cfg.MaxContexts)
	}
	c.starting++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.starting--
		c.mu.Unlock()
	}()
	first.Touch()
	release, err := first.pause.use(ctx) // a frozen sandbox starts nothing
	if err != nil {
		return ContextInfo{}, fmt.Errorf("sessions: start context: %w", err)
	}
	defer release()

	var undo cleanup.Stack
	defer undo.Unwind(&err)
	sctx, cancel := context.WithTimeout(ctx, first.cfg.StartTimeout)
	defer cancel()
	start := time.Now()
	sb, err := cs.StartContext(sctx, spec)
	if err != nil {
		var se *sandbox.SpecError
		if errors.As(err, &se) {
			return ContextInfo{}, &InvalidError{Reason: se.Public(), Err: err}
		}
		return ContextInfo{}, fmt.Errorf("sessions: start context: %w", err)
	}
	undo.Push("close context", func() error {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer ccancel()
		return sb.Close(cctx)
	})
	log := first.log.With().Str("context", id).Logger()
	conn, err := first.cfg.Dial(sctx, sb.Connection(), first.cfg.Kernel, log)
	if err != nil {
		return ContextInfo{}, fmt.Errorf("sessions: start context: %w: %w", sandbox.ErrUnavailable, err)
	}
	undo.Release()
	child := newKernel(first, kernelParams{contextID: id, kernel: kernel, cwd: spec.Cwd, log: log,
		slots: c.first.work.slots, sandbox: sb, client: conn})

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		if err := child.closeContext(context.WithoutCancel(ctx), "session closed"); err != nil {
			child.log.Warn().Err(err).Msg("context close failed")
		}
		return ContextInfo{}, ErrClosed
	}
	c.byID[id] = child
	if asDefault {
		c.defaults[kernel] = id
	}
	info := c.infoLocked(id, child)
	c.mu.Unlock()
	info.State = StateIdle
	first.hub.publish(Event{Type: EventContext, State: "created", Context: id, Name: kernel})
	first.log.Info().Str("context", id).Str("kernel", kernel).Dur("start", time.Since(start)).Msg("context started")
	return info, nil
}

// Delete stops context id and forgets it; the others keep running. The
// first context is the session itself: delete the session instead.
func (c *Contexts) Delete(ctx context.Context, id string) error {
	if id == FirstContext {
		return invalid("the first context is the session's own kernel: delete the session, or restart the context")
	}
	c.mu.Lock()
	k, ok := c.byID[id]
	if ok {
		delete(c.byID, id)
		if c.defaults[k.kernel] == id {
			delete(c.defaults, k.kernel)
		}
	}
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrContextNotFound, id)
	}
	// A context's kernel runs in its session's sandbox: whatever its
	// close leaves goes with the session's.
	if err := k.closeContext(ctx, "context deleted"); err != nil {
		k.log.Warn().Err(err).Msg("context close failed")
	}
	return nil
}

// Restart restarts context id's kernel: its variables are lost, the other
// contexts keep theirs.
func (c *Contexts) Restart(ctx context.Context, id string) error {
	s, err := c.Get(id)
	if err != nil {
		return err
	}
	return s.Restart(ctx)
}

// Interrupt interrupts the running execution of every context that runs
// one.
func (c *Contexts) Interrupt(ctx context.Context) error {
	var errs []error
	for _, s := range c.all() {
		if _, _, running := s.Running(); running || s == c.first {
			errs = append(errs, s.Interrupt(ctx))
		}
	}
	return errors.Join(errs...)
}

// Input answers the input() call of execution id in whichever context
// runs it (Session.InputAs).
func (c *Contexts) Input(owner, id, value string) error {
	for _, s := range c.all() {
		if err := s.InputAs(owner, id, value); !errors.Is(err, ErrNoInputPending) {
			return err
		}
	}
	return ErrNoInputPending
}

// CommKernel returns the kernel a client's comm message goes to: the one
// whose open comm is commID (a comm_msg, a comm_close), else context's
// (FirstContext or "": the first; a client's comm_open names its kernel
// so). Comms work in every context: each kernel keeps its own table.
func (c *Contexts) CommKernel(commID, context string) (*Kernel, error) {
	if commID != "" {
		for _, k := range c.all() {
			if k.side.comms.has(commID) {
				return k, nil
			}
		}
	}
	return c.Get(context)
}

// CloseComms closes owner's comms in every kernel (its client left; see
// Comms.CloseComms).
func (c *Contexts) CloseComms(owner string) {
	for _, k := range c.all() {
		k.Comms().CloseComms(owner)
	}
}

// all returns the first kernel and then the others.
func (c *Contexts) all() []*Kernel {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []*Kernel{c.first}
	for _, k := range c.byID {
		out = append(out, k)
	}
	return out
}

// busy reports whether a kernel of the session runs or waits to run an
// execution.
func (c *Contexts) busy() bool {
	for _, s := range c.all() {
		s.mu.Lock()
		b := s.state == StateBusy || s.queued.Load() > 0
		s.mu.Unlock()
		if b {
			return true
		}
	}
	return false
}

// closeAll closes every context but the first (the session closing or
// detaching: a context does not outlive the gateway that started it).
func (c *Contexts) closeAll(ctx context.Context, reason string) {
	c.mu.Lock()
	c.closed = true
	entries := c.byID
	c.byID = map[string]*Kernel{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.closeContext(ctx, reason); err != nil {
				k.log.Warn().Err(err).Msg("context close failed")
			}
		}()
	}
	wg.Wait()
}

// newContextID names a context after its kernel, with 32 random bits
// ("r-1f2e3d4c"): never the name of one still closing.
func newContextID(kernel string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("sessions: crypto/rand failed: %v", err))
	}
	return kernel + "-" + hex.EncodeToString(b[:])
}
