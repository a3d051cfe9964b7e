package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
)

// Session is one tenant's sandbox and what lives in it: its workspace,
// its egress proxy, its lifetime and idle expiry, its idle pause, its
// event log, its commands and its kernels (Contexts: the first, First,
// and the others). Its methods are safe for concurrent use; the kernels'
// work is their own (Kernel).
//
// The types it holds, each with its own lock:
//
//   - hub (event.go): the event log, its backlog and subscribers (hub.mu);
//   - pause (pause.go): the idle freeze (pause.mu);
//   - ctxs (contexts.go): the table of its kernels (Contexts.mu);
//   - cmds (commands.go): its commands and terminals.
//
// Lock order: Session.mu → Contexts.mu → Kernel.mu (see Kernel) → hub.mu.
type Session struct {
	// Set at creation, never changed.
	id, tenant, runtime string
	cfg                 Config
	log                 zerolog.Logger
	created             time.Time
	budget              *Account
	sandbox             sandbox.Sandbox
	files               workspace.FS
	egress              *egress.Proxy     // nil without a network; closed after the sandbox
	volumes             map[string]string // its volumes: name → path in the sandbox (nil: none)
	releaseVolumes      func()            // gives them back once the sandbox is gone (nil: none)
	persist             func()            // writes the session's record to the store (set by the manager)
	wake                func()            // tells the reaper a deadline moved (set by the manager)
	networks            *networks         // admits a network change (SetNetwork); nil in tests without one
	template            string            // the template it was created from
	metadata            map[string]string // the client's; never changed
	privatePreviews     bool              // CreateOptions.PrivatePreviews; never changed
	lifecycle           Lifecycle         // CreateOptions.Lifecycle; never changed
	lifetime            time.Duration     // CreateOptions.Lifetime (0: none asked), for a resume after a pause at the timeout
	env                 map[string]string // CreateOptions.Env, which a hibernation keeps for the wake
	metrics             *MetricsLog       // its resource use, now and its last samples (metricshistory.go)
	hub                 *hub              // the event log (event.go)
	side                *sideHub          // its kernels' side streams, fanned out (side.go)
	pause               *pauser           // freezes the sandbox while its kernels go unused (pause.go)
	// hibernating is set once the session's hibernation record is
	// written (hibernate.go): flushes leave its live record out, and its
	// close keeps the hibernation's.
	hibernating atomic.Bool
	first       *Kernel         // the kernel it was created with
	ctxs        *Contexts       // its kernels: the first and the others
	cmds        *Commands       // its commands
	ctx         context.Context // ends when the session closes or detaches
	cancel      context.CancelFunc

	mu          sync.Mutex
	clients     int // attached WebSocket clients
	idle        time.Duration
	lastActive  time.Time
	endAt       time.Time // the lifetime's end (SetLifetime moves it)
	closeReason string
	// jupyterSessions are the Jupyter sessions whose kernel is the first
	// (jupytersessions.go); kept in the store record.
	jupyterSessions []JupyterSession
}

// sessionParams is what newSession needs: a started sandbox with a
// connected kernel and its opened workspace, all owned by the session from
// then on.
type sessionParams struct {
	id, tenant, runtime string
	cfg                 Config
	log                 zerolog.Logger
	idle                time.Duration
	created, lastActive time.Time // zero: now (a restored session has its own)
	firstSeq            int64     // the first event's number - 1 (a restored session's is past its old ones)
	budget              *Account
	slots               *execSlots
	sandbox             sandbox.Sandbox
	client              KernelConn
	files               workspace.FS
	watch               workspace.Tracker // may be nil
	egress              *egress.Proxy     // nil without a network
	persist             func(*Session)    // writes the session's record (nil: nothing to write)
	wake                func()            // tells the reaper a deadline moved (nil: nobody to tell)
	networks            *networks
	kernel, cwd         string // the first kernel's; "": the default kernel, in the workspace
	installed           []sandbox.KernelSpec
	template            string
	metadata            map[string]string
	endAt               time.Time         // zero: created + Config.MaxLifetime
	jupyterSessions     []JupyterSession  // a restored session's (checked)
	volumes             map[string]string // name → path in the sandbox
	releaseVolumes      func()            // gives them back to the store (nil: none)
	privatePreviews     bool              // CreateOptions.PrivatePreviews
	lifecycle           Lifecycle         // CreateOptions.Lifecycle
	lifetime            time.Duration     // CreateOptions.Lifetime
	env                 map[string]string // CreateOptions.Env (nil for a restored session: its sandbox has it)
}

// newSessionID returns 128 random bits in hex.
func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("sessions: crypto/rand failed: %v", err))
	}
	return hex.EncodeToString(b[:])
}

func newSession(p sessionParams) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	created, active := p.created, p.lastActive
	if created.IsZero() {
		created, active = now, now
	}
	log := p.log.With().Str("session", p.id).Logger()
	endAt := p.endAt
	if endAt.IsZero() {
		endAt = created.Add(p.cfg.MaxLifetime)
	}
	s := &Session{
		id: p.id, tenant: p.tenant, runtime: p.runtime, cfg: p.cfg, log: log, template: p.template, metadata: p.metadata, endAt: endAt,
		created: created, idle: p.idle, persist: func() {}, wake: func() {}, networks: p.networks, budget: p.budget, sandbox: p.sandbox, files: p.files, egress: p.egress, volumes: p.volumes, releaseVolumes: p.releaseVolumes,
		ctx: ctx, cancel: cancel, lastActive: active, jupyterSessions: p.jupyterSessions, privatePreviews: p.privatePreviews,
		lifecycle: p.lifecycle, lifetime: p.lifetime, env: p.env,
	}
	s.metrics = newMetricsLog(s, p.cfg.MetricsHistory)
	if p.persist != nil { // set before the worker starts: a kernel death persists at once
		s.persist = func() { p.persist(s) }
	}
	if p.wake != nil {
		s.wake = p.wake
	}
	s.hub = newHub(p.cfg, p.budget, p.firstSeq)
	s.side = newSideHub(&s.cfg, s.hub.last)
	var frozen func()
	if p.egress != nil {
		frozen = p.egress.CloseConnections // a frozen kernel holds no tunnel open
	}
	s.pause = newPauser(p.sandbox, p.cfg.PauseAfter, s.log, frozen)
	s.pause.autoResume = p.lifecycle.AutoResume
	s.pause.woke = func() { resumedAfterTimeout(s, "by its use") } // its lifetime starts again
	s.cmds = newCommands(s)
	s.first = newKernel(s, kernelParams{kernel: p.kernel, cwd: p.cwd, log: log, slots: p.slots, sandbox: p.sandbox,
		client: p.client, watch: p.watch})
	s.ctxs = newContexts(s, p.installed)
	s.tellEnd(endAt)
	return s
}

// First returns the session's first kernel: the language it was created
// with (FirstContext).
func (s *Session) First() *Kernel { return s.first }

// Contexts returns the session's kernels.
func (s *Session) Contexts() *Contexts { return s.ctxs }

// Commands returns the session's commands.
func (s *Session) Commands() *Commands { return s.cmds }

// close ends the session: its commands, its other kernels, then its first
// and its sandbox, its egress proxy, its workspace and its event log.
// Every step runs whatever the others did: a step that panics (a bug) is
// logged and the close goes on, so that what can be freed is freed and
// the gateway never dies of one session's close. It returns the steps'
// failures; a failed sandbox close (ErrSandboxLeft) means the kernel may
// still run: the manager keeps such a session in view and tries again.
func (s *Session) close(ctx context.Context, reason string) error {
	s.mu.Lock()
	if s.closeReason == "" {
		s.closeReason = reason
	}
	s.mu.Unlock()
	s.first.noteClose(reason) // before its context ends with the session's
	steps := closeSteps{log: s.log}
	steps.run("thaw", func() error { s.pause.thawForGood(ctx); return nil }) // a frozen process cannot die
	steps.run("commands", func() error { s.cmds.close(); return nil })       // they end with their exited events
	steps.run("contexts", func() error { s.ctxs.closeAll(ctx, reason); return nil })
	s.cancel()
	s.first.close(ctx, reason, &steps) // kills the sandbox first: nothing the code does then keeps the worker busy
	if s.egress != nil {               // nothing can use it once the sandbox is gone
		steps.run("egress", func() error {
			if err := s.egress.Close(); err != nil {
				s.log.Warn().Err(err).Msg("egress proxy close failed")
			}
			return nil
		})
	}
	steps.run("side stream", func() error { s.side.close(); return nil })
	steps.run("files", func() error { _ = s.files.Close(); return nil })
	if len(steps.errs) == 0 && s.releaseVolumes != nil { // a sandbox that may still run keeps them (the manager closes it again)
		steps.run("volumes", func() error { s.releaseVolumes(); return nil })
	}
	steps.run("events", func() error {
		s.first.publish(Event{Type: EventKernel, State: string(StateDead), Reason: reason})
		s.hub.close()
		return nil
	})
	s.budget.Close() // what its executions' callers still hold comes back as they finish
	return errors.Join(steps.errs...)
}

// closeSteps runs the steps of a close, each whatever the others did, and
// keeps their failures. One goroutine uses it.
type closeSteps struct {
	log  zerolog.Logger
	errs []error
}

func (c *closeSteps) run(name string, f func() error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Str("step", name).Msg("session close: a step panicked; the close goes on")
			err := fmt.Errorf("sessions: close: %s: panic: %v", name, r)
			if name == "sandbox" { // who knows what is left of it
				err = fmt.Errorf("%w: %w", ErrSandboxLeft, err)
			}
			c.errs = append(c.errs, err)
		}
	}()
	if err := f(); err != nil {
		c.errs = append(c.errs, fmt.Errorf("sessions: close: %s: %w", name, err))
	}
}

// tellEnd tells a sandbox that ends itself once no gateway holds it
// (sandbox.Expiring) when the session ends.
func (s *Session) tellEnd(end time.Time) {
	if s.lifecycle.OnTimeout == OnTimeoutPause {
		// Its timeout pauses it, even one that passes while no gateway
		// runs (the next restores and pauses it): only the maximum
		// lifetime ends it.
		end = s.created.Add(s.cfg.MaxLifetime)
	}
	if e, ok := s.sandbox.(sandbox.Expiring); ok {
		if err := e.SetEnd(end); err != nil {
			s.log.Warn().Err(err).Msg("telling the sandbox its end failed")
		}
	}
}

// Files returns the session's workspace. File calls do not go through the
// execution queue: they work while code runs.
func (s *Session) Files() workspace.FS {
	s.Touch()
	return s.files
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Workspace returns the host path of the session's workspace.
func (s *Session) Workspace() string { return s.sandbox.Workspace() }

// SetLifetime makes the session end d from now (E2B's set_timeout),
// shorter or longer, but never past Config.MaxLifetime after its
// creation: a session cannot be kept alive for ever by extending it. 0
// is now: the session ends, or pauses when its Lifecycle says so.
func (s *Session) SetLifetime(d time.Duration) error {
	if d < 0 || d > s.cfg.MaxLifetime {
		return invalid("lifetime must be within 0..%v", s.cfg.MaxLifetime)
	}
	now := time.Now()
	if limit := s.created.Add(s.cfg.MaxLifetime); now.Add(d).After(limit) {
		return invalid("a session ends at the latest %v after its creation (--max-lifetime): this one may live %v more, not %v",
			s.cfg.MaxLifetime, max(limit.Sub(now), 0).Truncate(time.Second), d)
	}
	moveEnd(s, now.Add(d)) // the reaper ends it on time, not at its next tick
	return nil
}

// expired reports why the session should be deleted now, or "".
func (s *Session) expired(now time.Time) string {
	held := s.pause.isHeld()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.endAt) {
		return "lifetime ended"
	}
	if held { // a client paused it: no idle expiry until it is resumed
		return ""
	}
	if now.After(s.lastActive.Add(s.idle)) && !s.ctxs.busy() && !s.cmds.busy() {
		return "idle timeout"
	}
	return ""
}

// Touch records activity, postponing idle expiry.
func (s *Session) Touch() {
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// Subscribe returns the session's events after seq since (0 for the whole
// backlog), then live events. The caller must Close the subscription.
func (s *Session) Subscribe(since int64) *Subscription { return s.hub.subscribe(since) }

// Attach registers a client (a WebSocket) of the session, at most
// Config.MaxClients at once. The caller must call release when it leaves.
func (s *Session) Attach() (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients >= s.cfg.MaxClients {
		return nil, fmt.Errorf("%w: %d clients attached to this session", ErrTooManyClients, s.clients)
	}
	s.clients++
	s.lastActive = time.Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.clients--
			s.mu.Unlock()
		})
	}, nil
}

// LastSeq returns the sequence number of the newest event.
func (s *Session) LastSeq() int64 { return s.hub.last() }

// SetIdleTimeout changes how long the session may stay idle before it is
// deleted (1 s up to Config.MaxIdleTimeout), counting from now.
func (s *Session) SetIdleTimeout(d time.Duration) error {
	if d < time.Second || d > s.cfg.MaxIdleTimeout {
		return invalid("idle timeout must be within 1s..%v", s.cfg.MaxIdleTimeout)
	}
	s.mu.Lock()
	s.idle = d
	s.lastActive = time.Now()
	s.mu.Unlock()
	s.wake()
	return nil
}

// LastActivity returns when the session was last used (what idle expiry
// counts from).
func (s *Session) LastActivity() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastActive
}

// Clients returns how many clients (WebSockets of either face) are
// attached.
func (s *Session) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients
}

// Done is closed when the session closes (or its gateway detaches it):
// what serves it (a files-watch socket) then ends.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }
