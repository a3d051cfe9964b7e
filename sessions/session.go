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
	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
)

// Session is one tenant's persistent kernel. Its methods are safe for
// concurrent use. Executions run one at a time in submission order, on the
// session's worker goroutine (worker.go), which alone changes the kernel.
//
// Session is the door: its methods check and queue requests and read the
// state; the work is done by the types it holds, each with its own lock
// (or none, when one goroutine owns it):
//
//   - work (worker.go, run.go): the goroutine that owns the kernel, runs
//     the jobs and restarts;
//   - hub (event.go): the event log, its backlog and subscribers (hub.mu);
//   - jup (jupyter.go): the Jupyter face's bookkeeping of executions and
//     kernel incarnations (jup.mu, innermost);
//   - relay (relay.go): the requests that bypass the queue and the cached
//     kernel_info (relay.infoMu, relay.mu);
//   - side (side.go, comms.go): the kernel's side stream, its
//     subscribers and the table of open comms (side.subMu, side.progMu,
//     side.comms.mu, each innermost), read by one owner goroutine per
//     kernel incarnation that the worker starts;
//   - pause (pause.go): the idle freeze (pause.mu);
//   - each job's output (output.go): the caps and budget of one
//     execution's output (owned by its execute goroutine).
//
// Lock order: relay.infoMu → s.mu → hub.mu, jup.mu, relay.mu. s.mu is
// held while publishing the queued and started events (so a job's
// started never precedes its queued), never around pause.use or a kernel
// call.
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
	persist             func()            // writes the session's record to the store (set by the manager)
	kernel              string            // the kernel's canonical name (sandbox.KernelSpec.Name)
	cwd                 string            // the kernel's working directory in the sandbox
	template            string            // the template it was created from
	metadata            map[string]string // the client's; never changed
	// Contexts: a session's first context has ctxs (its others); each
	// other context is a Session with parent (the first) and contextID set,
	// which shares the first's files, event log and pauser, and owns none
	// of them.
	ctxs      *Contexts
	cmds      *Commands // the session's commands (the first context's; nil on another context)
	parent    *Session
	contextID string

	disk  diskWalk     // one walk of the workspace's disk use at a time (metrics.go)
	hub   *hub         // the event log (event.go)
	jup   jupyterState // the Jupyter face's bookkeeping (jupyter.go)
	relay *relay       // the requests that bypass the queue (relay.go)
	side  *sideState   // the kernel's side stream and comms (side.go, comms.go)
	pause *pauser      // freezes the sandbox while its kernel goes unused (pause.go)
	work  *worker      // owns the kernel (worker.go)

	queue   chan *job       // to the worker
	restart chan chan error // to the worker
	queued  atomic.Int32    // jobs in queue
	// queuedCode is the code bytes of the jobs in queue (QueueCodeBytes);
	// changed under mu by enqueue, and by the worker as it takes jobs.
	queuedCode atomic.Int64
	ctx        context.Context // ends when the session closes or detaches
	cancel     context.CancelFunc

	mu           sync.Mutex
	state        State
	client       KernelConn // the current kernel (replaced by the worker's restarts)
	current      *job       // running execution
	inputPending string     // execution id waiting for input
	clients      int        // attached WebSocket clients
	idle         time.Duration
	lastActive   time.Time
	endAt        time.Time // the lifetime's end (SetLifetime moves it)
	closeReason  string
	room         chan struct{} // closed (and replaced) when the worker takes a job
	// jupyterSessions are the Jupyter sessions whose kernel this is
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
	kernel, cwd         string            // "": the default kernel, in the workspace
	installed           []sandbox.KernelSpec
	template            string
	metadata            map[string]string
	endAt               time.Time        // zero: created + Config.MaxLifetime
	jupyterSessions     []JupyterSession // a restored session's (checked)
	// parent is set for a context other than a session's first
	// (Contexts.start): the session it belongs to, whose files, event log
	// and pauser it shares; contextID is its id.
	parent    *Session
	contextID string
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
	kernelName, cwd := p.kernel, p.cwd
	if kernelName == "" {
		kernelName = sandbox.DefaultKernel
	}
	if cwd == "" {
		cwd = sandbox.WorkDir
	}
	log := p.log
	if p.parent == nil {
		log = log.With().Str("session", p.id).Logger()
	}
	endAt := p.endAt
	if endAt.IsZero() {
		endAt = created.Add(p.cfg.MaxLifetime)
	}
	s := &Session{
		id: p.id, tenant: p.tenant, runtime: p.runtime, cfg: p.cfg, log: log, template: p.template, metadata: p.metadata, endAt: endAt,
		created: created, idle: p.idle, persist: func() {}, budget: p.budget, sandbox: p.sandbox, files: p.files, egress: p.egress,
		kernel: kernelName, cwd: cwd, parent: p.parent, contextID: p.contextID,
		queue:   make(chan *job, p.cfg.QueueDepth),
		restart: make(chan chan error),
		ctx:     ctx, cancel: cancel,
		state: StateIdle, client: p.client, lastActive: active, room: make(chan struct{}), jupyterSessions: p.jupyterSessions,
	}
	if p.persist != nil { // set before the worker starts: a kernel death persists at once
		s.persist = func() { p.persist(s) }
	}
	if p.parent != nil {
		s.hub, s.pause = p.parent.hub, p.parent.pause
	} else {
		s.hub = newHub(p.cfg, p.budget, p.firstSeq)
		var frozen func()
		if p.egress != nil {
			frozen = p.egress.CloseConnections // a frozen kernel holds no tunnel open
		}
		s.pause = newPauser(p.sandbox, p.cfg.PauseAfter, s.log, frozen)
		s.ctxs = newContexts(s, p.installed)
		s.cmds = newCommands(s)
	}
	s.relay = &relay{maxCode: p.cfg.MaxCodeBytes, pause: s.pause, touch: s.Touch, conn: s.kernelClient,
		busy: func() bool { return s.Info().State == StateBusy }}
	s.side = newSideState(&s.cfg, s.LastSeq)
	s.work = &worker{s: s, slots: p.slots, watch: p.watch}
	s.work.start(p.client)
	if p.parent == nil {
		s.tellEnd(endAt)
	}
	return s
}

// tellEnd tells a sandbox that ends itself once no gateway holds it
// (sandbox.Expiring) when the session ends.
func (s *Session) tellEnd(end time.Time) {
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
// creation: a session cannot be kept alive for ever by extending it.
func (s *Session) SetLifetime(d time.Duration) error {
	if d <= 0 || d > s.cfg.MaxLifetime {
		return invalid("lifetime must be within 0..%v", s.cfg.MaxLifetime)
	}
	now := time.Now()
	if limit := s.created.Add(s.cfg.MaxLifetime); now.Add(d).After(limit) {
		return invalid("a session ends at the latest %v after its creation (--max-lifetime): this one may live %v more, not %v",
			s.cfg.MaxLifetime, max(limit.Sub(now), 0).Truncate(time.Second), d)
	}
	s.mu.Lock()
	s.endAt = now.Add(d)
	end := s.endAt
	s.mu.Unlock()
	s.tellEnd(end)
	s.persist()
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
	if s.state != StateBusy && s.queued.Load() == 0 && now.After(s.lastActive.Add(s.idle)) && !s.otherContextsBusy() &&
		(s.cmds == nil || !s.cmds.busy()) {
		return "idle timeout"
	}
	return ""
}

// otherContextsBusy reports whether a context other than the first runs
// an execution. Called with s.mu held: the contexts' locks come after it.
func (s *Session) otherContextsBusy() bool { return s.ctxs != nil && s.ctxs.busy() }

// Touch records activity, postponing idle expiry.
func (s *Session) Touch() {
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
	if s.parent != nil { // a context's activity is its session's
		s.parent.Touch()
	}
}

func (s *Session) kernelClient() KernelConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
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

// Submit queues an execution without waiting for it; its events go to
// subscribers. It fails with ErrQueueFull when the queue is full.
func (s *Session) Submit(req ExecRequest) (string, error) {
	j, err := s.enqueue(req, false)
	if err != nil {
		return "", err
	}
	return j.req.ID, nil
}

// SubmitWait is Submit that waits, while the queue is full, for the worker
// to take a job (or for ctx to end): the flow control of a client that
// sends faster than the kernel runs.
func (s *Session) SubmitWait(ctx context.Context, req ExecRequest) (string, error) {
	for {
		s.mu.Lock()
		room := s.room
		s.mu.Unlock()
		id, err := s.Submit(req)
		if !errors.Is(err, ErrQueueFull) {
			return id, err
		}
		select {
		case <-room:
		case <-ctx.Done():
			return "", fmt.Errorf("sessions: submit: %w", ctx.Err())
		case <-s.ctx.Done():
			return "", ErrClosed
		}
	}
}

// Execute queues an execution and waits for its result. If ctx ends first
// the execution still runs to completion; only the wait is abandoned.
func (s *Session) Execute(ctx context.Context, req ExecRequest) (*Execution, error) {
	j, err := s.enqueue(req, true)
	if err != nil {
		return nil, err
	}
	select {
	case e := <-j.result:
		return e, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Session) enqueue(req ExecRequest, collect bool) (*job, error) {
	if err := req.validate(&s.cfg); err != nil {
		return nil, err
	}
	if err := req.validateSettings(s.kernel); err != nil {
		return nil, err
	}
	if s.pause.isHeld() {
		return nil, ErrPaused
	}
	j := newJob(req, collect, capsOf(&s.cfg), s.budget)
	// s.mu is held across the hand-off so the worker cannot publish this
	// job's "started" before its "queued", and close cannot miss the job.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil, ErrClosed
	}
	code := int64(len(req.Code))
	if held := s.queuedCode.Load(); held > 0 && held+code > int64(s.cfg.QueueCodeBytes) {
		return nil, fmt.Errorf("%w: %d bytes of code waiting (at most %d)", ErrQueueFull, held, s.cfg.QueueCodeBytes)
	}
	s.jup.number(j)
	pos := int(s.queued.Add(1))
	select {
	case s.queue <- j:
		s.queuedCode.Add(code)
	default:
		s.queued.Add(-1)
		return nil, fmt.Errorf("%w: %d executions waiting", ErrQueueFull, cap(s.queue))
	}
	s.lastActive = time.Now()
	if s.current != nil || pos > 1 {
		s.publish(Event{Type: EventQueued, ID: req.ID, Position: ptr(pos)})
	}
	return j, nil
}

// Interrupt interrupts the running execution, if any.
func (s *Session) Interrupt(ctx context.Context) error {
	s.Touch()
	s.mu.Lock()
	j := s.current
	if j != nil {
		j.interrupted.Store(true)
	}
	c := s.client
	s.mu.Unlock()
	release, err := s.pause.use(ctx)
	if err != nil {
		return fmt.Errorf("sessions: interrupt: %w", err)
	}
	defer release()
	awaitKernelStart(ctx, j)
	if j != nil && j.codeEnded.Load() {
		return nil // its code is done; what runs now puts its settings back (execenv.go)
	}
	if err := c.Interrupt(ctx); err != nil {
		return fmt.Errorf("sessions: interrupt: %w", err)
	}
	return nil
}

// Input answers the input() call of execution id, unless the execution
// has an Owner (then only InputAs with that owner answers it).
func (s *Session) Input(id, value string) error { return s.InputAs("", id, value) }

// InputAs answers the input() call of execution id on behalf of owner: it
// is refused (ErrNoInputPending) unless the running execution is id, asks
// for input and was submitted with ExecRequest.Owner == owner. The check
// and the hand-off are one step, so a queued execution that reuses id
// cannot take another owner's answer.
func (s *Session) InputAs(owner, id, value string) error {
	s.Touch()
	s.mu.Lock()
	pending := s.inputPending
	ok := pending != "" && pending == id && s.current != nil && s.current.req.ID == id && s.current.req.Owner == owner
	if ok {
		s.inputPending = ""
	}
	c := s.client
	s.mu.Unlock()
	if !ok {
		return ErrNoInputPending
	}
	if err := c.Input(value); err != nil {
		if errors.Is(err, kernel.ErrNoInputRequest) {
			return ErrNoInputPending
		}
		return fmt.Errorf("sessions: input: %w", err)
	}
	return nil
}

// Restart replaces the kernel: variables are lost, the workspace is kept.
// A running execution ends with status "interrupted" and state_lost.
func (s *Session) Restart(ctx context.Context) error {
	if s.pause.isHeld() { // a restart would thaw the sandbox a client paused
		return ErrPaused
	}
	s.Touch()
	done := make(chan error, 1)
	select {
	case s.restart <- done:
	case <-s.ctx.Done():
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

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

// Running returns the id and description of the running execution, if
// any.
func (s *Session) Running() (id string, info *ExecInfo, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil || s.current.info == nil {
		return "", nil, false
	}
	return s.current.req.ID, s.current.info, true
}

// ExitError is the cause of death when the kernel process exited.
type ExitError struct{ Reason string }

func (e *ExitError) Error() string { return "kernel process exited: " + e.Reason }

// close stops the worker, kills the kernel and ends all subscriptions.
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
	var errs []error
	step := func(name string, f func() error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error().Interface("panic", r).Str("step", name).Msg("session close: a step panicked; the close goes on")
				err := fmt.Errorf("sessions: close: %s: panic: %v", name, r)
				if name == "sandbox" { // who knows what is left of it
					err = fmt.Errorf("%w: %w", ErrSandboxLeft, err)
				}
				errs = append(errs, err)
			}
		}()
		if err := f(); err != nil {
			errs = append(errs, fmt.Errorf("sessions: close: %s: %w", name, err))
		}
	}
	if s.cmds != nil { // its commands first: they end with their exited events
		step("commands", func() error { s.cmds.close(); return nil })
	}
	if s.ctxs != nil { // a session's other kernels go first, then its own
		step("contexts", func() error { s.ctxs.closeAll(ctx, reason); return nil })
	}
	s.cancel()
	// Kill the kernel first: nothing the code does can then keep the
	// worker busy while we wait for it.
	step("sandbox", func() error {
		if err := s.sandbox.Close(ctx); err != nil {
			s.log.Warn().Err(err).Msg("sandbox close failed")
			return fmt.Errorf("%w: %w", ErrSandboxLeft, err)
		}
		return nil
	})
	if s.egress != nil { // nothing can use it once the sandbox is gone
		step("egress", func() error {
			if err := s.egress.Close(); err != nil {
				s.log.Warn().Err(err).Msg("egress proxy close failed")
			}
			return nil
		})
	}
	step("worker", func() error { s.work.stop(); return nil })
	step("side stream", func() error { s.side.close(); return nil })
	s.mu.Lock()
	s.state = StateDead
	s.mu.Unlock()
	if s.parent != nil { // the files and the event log are the session's
		step("events", func() error {
			s.hub.publish(Event{Type: EventContext, State: "deleted", Context: s.contextID, Name: s.kernel, Reason: reason})
			return nil
		})
		return errors.Join(errs...)
	}
	step("files", func() error { _ = s.files.Close(); return nil })
	step("events", func() error {
		s.publish(Event{Type: EventKernel, State: string(StateDead), Reason: reason})
		s.hub.close()
		return nil
	})
	s.budget.Close() // what its executions' callers still hold comes back as they finish
	return errors.Join(errs...)
}

// publish adds ev to the session's event log, marked with the context it
// comes from.
func (s *Session) publish(ev Event) Event {
	ev.Context = s.contextID
	return s.hub.publish(ev)
}

// Done is closed when the session closes (or its gateway detaches it):
// what serves it (a files-watch socket) then ends.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }
