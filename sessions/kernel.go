package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
)

// Kernel is one kernel of a session: the session's first (the language
// it was created with) or one of its other contexts (Contexts), each with
// its own queue, worker, kernel connection, Jupyter bookkeeping, direct
// and side stream, sharing its session's workspace, event log, idle
// pause and activity. Its methods are safe for concurrent use. Executions
// run one at a time in submission order, on the kernel's worker goroutine
// (worker.go), which alone changes the kernel.
//
// Kernel is the door: its methods check and queue requests and read the
// state; the work is done by the types it holds, each with its own lock
// (or none, when one goroutine owns it):
//
//   - work (worker.go, run.go): the goroutine that owns the kernel, runs
//     the jobs and restarts;
//   - jup (jupyter.go): the Jupyter face's bookkeeping of executions and
//     kernel incarnations (jup.mu, innermost);
//   - direct (direct.go): the requests that bypass the queue and the cached
//     kernel_info (direct.infoMu, direct.mu);
//   - side (side.go, comms.go): the kernel's side stream, its
//     subscribers and the table of open comms (side.subMu, side.progMu,
//     side.comms.mu, each innermost), read by one owner goroutine per
//     kernel incarnation that the worker starts;
//   - each job's output (output.go): the caps and budget of one
//     execution's output (owned by its execute goroutine).
//
// Lock order: Session.mu → Contexts.mu → direct.infoMu → Kernel.mu →
// hub.mu, jup.mu, direct.mu. k.mu is held while publishing the queued and
// started events (so a job's started never precedes its queued), never
// around pause.use, a kernel call or the session's lock (Touch).
type Kernel struct {
	// Set at creation, never changed.
	s         *Session // the session it belongs to
	contextID string   // "" for the session's first kernel (FirstContext)
	kernel    string   // the kernel's canonical name (sandbox.KernelSpec.Name)
	cwd       string   // the kernel's working directory in the sandbox
	cfg       Config
	log       zerolog.Logger
	budget    *Account
	sandbox   sandbox.Sandbox // the session's for its first kernel; a context's own for the others
	hub       *hub            // the session's event log (event.go)
	pause     *pauser         // the session's idle freeze (pause.go)

	jup    jupyterState    // the Jupyter face's bookkeeping (jupyter.go)
	direct *directRequests // the requests that bypass the queue (direct.go)
	side   *sideState      // the kernel's side stream and comms (side.go, comms.go)
	work   *worker         // owns the kernel (worker.go)

	queue   chan *job       // to the worker
	restart chan chan error // to the worker
	queued  atomic.Int32    // jobs in queue
	// queuedCode is the code bytes of the jobs in queue (QueueCodeBytes);
	// changed under mu by enqueue, and by the worker as it takes jobs.
	queuedCode atomic.Int64
	ctx        context.Context // ends when the kernel closes, or its session closes or detaches
	cancel     context.CancelFunc

	mu           sync.Mutex
	state        State
	client       KernelConn // the current kernel (replaced by the worker's restarts)
	current      *job       // running execution
	inputPending string     // execution id waiting for input
	closeReason  string
	room         chan struct{} // closed (and replaced) when the worker takes a job
}

// kernelParams is what newKernel needs: a started sandbox (the session's,
// or a context's own) with a connected kernel, owned by the kernel from
// then on.
type kernelParams struct {
	contextID   string // "" for the session's first
	kernel, cwd string // "": the default kernel, in the workspace
	log         zerolog.Logger
	slots       *execSlots
	sandbox     sandbox.Sandbox
	client      KernelConn
	watch       workspace.Tracker // may be nil
}

// newKernel starts the worker of a kernel of s.
func newKernel(s *Session, p kernelParams) *Kernel {
	ctx, cancel := context.WithCancel(s.ctx)
	name, cwd := p.kernel, p.cwd
	if name == "" {
		name = sandbox.DefaultKernel
	}
	if cwd == "" {
		cwd = sandbox.WorkDir
	}
	k := &Kernel{
		s: s, contextID: p.contextID, kernel: name, cwd: cwd, cfg: s.cfg, log: p.log, budget: s.budget,
		sandbox: p.sandbox, hub: s.hub, pause: s.pause,
		queue:   make(chan *job, s.cfg.QueueDepth),
		restart: make(chan chan error),
		ctx:     ctx, cancel: cancel,
		state: StateIdle, client: p.client, room: make(chan struct{}),
	}
	k.direct = &directRequests{maxCode: s.cfg.MaxCodeBytes, pause: k.pause, touch: s.Touch, conn: k.kernelClient,
		busy: func() bool { return k.State() == StateBusy }}
	k.side = newSideState(&k.cfg, s.side, p.contextID)
	k.work = &worker{s: k, slots: p.slots, watch: p.watch}
	k.work.start(p.client)
	return k
}

// ID returns the kernel's context id (FirstContext for the session's
// first).
func (s *Kernel) ID() string {
	if s.contextID == "" {
		return FirstContext
	}
	return s.contextID
}

// Session returns the session the kernel belongs to.
func (s *Kernel) Session() *Session { return s.s }

// State returns the kernel's state.
func (s *Kernel) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *Kernel) kernelClient() KernelConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// Submit queues an execution without waiting for it; its events go to
// subscribers. It fails with ErrQueueFull when the queue is full.
func (s *Kernel) Submit(req ExecRequest) (string, error) {
	j, err := s.enqueue(req, false)
	if err != nil {
		return "", err
	}
	return j.req.ID, nil
}

// SubmitWait is Submit that waits, while the queue is full, for the worker
// to take a job (or for ctx to end): the flow control of a client that
// sends faster than the kernel runs.
func (s *Kernel) SubmitWait(ctx context.Context, req ExecRequest) (string, error) {
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
func (s *Kernel) Execute(ctx context.Context, req ExecRequest) (*Execution, error) {
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

func (s *Kernel) enqueue(req ExecRequest, collect bool) (*job, error) {
	if err := req.validate(&s.cfg); err != nil {
		return nil, err
	}
	if err := req.validateSettings(s.kernel); err != nil {
		return nil, err
	}
	if s.pause.refuses() {
		return nil, ErrPaused
	}
	j := newJob(req, collect, capsOf(&s.cfg), s.budget)
	s.s.Touch() // before s.mu: the session's lock comes first
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
	if s.current != nil || pos > 1 {
		s.publish(Event{Type: EventQueued, ID: req.ID, Position: ptr(pos)})
	}
	return j, nil
}

// Interrupt interrupts the running execution, if any.
func (s *Kernel) Interrupt(ctx context.Context) error {
	s.s.Touch()
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
func (s *Kernel) Input(id, value string) error { return s.InputAs("", id, value) }

// InputAs answers the input() call of execution id on behalf of owner: it
// is refused (ErrNoInputPending) unless the running execution is id, asks
// for input and was submitted with ExecRequest.Owner == owner. The check
// and the hand-off are one step, so a queued execution that reuses id
// cannot take another owner's answer.
func (s *Kernel) InputAs(owner, id, value string) error {
	s.s.Touch()
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
func (s *Kernel) Restart(ctx context.Context) error {
	if s.pause.isHeld() { // a restart would thaw the sandbox a client paused; one paused at its timeout with auto_resume resumes
		release, err := s.pause.use(ctx)
		if err != nil {
			return err
		}
		release()
	}
	s.s.Touch()
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

// Running returns the id and description of the running execution, if
// any.
func (s *Kernel) Running() (id string, info *ExecInfo, ok bool) {
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

// close ends the kernel: its sandbox first (the session's, for its
// first kernel: nothing the code does can then keep the worker busy),
// then its worker and its side stream; a context other than the first
// publishes its deletion. steps runs each step (see Session.close).
func (s *Kernel) close(ctx context.Context, reason string, steps *closeSteps) {
	s.noteClose(reason)
	s.cancel()
	steps.run("sandbox", func() error {
		if err := s.sandbox.Close(ctx); err != nil {
			s.log.Warn().Err(err).Msg("sandbox close failed")
			return fmt.Errorf("%w: %w", ErrSandboxLeft, err)
		}
		return nil
	})
	steps.run("worker", func() error { s.work.stop(); return nil })
	s.mu.Lock()
	s.state = StateDead
	s.mu.Unlock()
	if s.contextID != "" { // the files and the event log are the session's
		steps.run("events", func() error {
			s.hub.publish(Event{Type: EventContext, State: "deleted", Context: s.contextID, Name: s.kernel, Reason: reason})
			return nil
		})
	}
}

// detach stops the kernel's worker and side stream and leaves its process
// running: its session detaches, for the next gateway to adopt.
func (s *Kernel) detach(reason string) {
	s.noteClose(reason)
	s.cancel()
	s.work.stop()
}

// noteClose records why the kernel ends (its queued jobs fail with it),
// unless a reason is recorded already.
func (s *Kernel) noteClose(reason string) {
	s.mu.Lock()
	if s.closeReason == "" {
		s.closeReason = reason
	}
	s.mu.Unlock()
}

// closeContext closes a kernel other than the session's first: the
// context is deleted, or its session closes.
func (s *Kernel) closeContext(ctx context.Context, reason string) error {
	steps := closeSteps{log: s.log}
	s.close(ctx, reason, &steps)
	return errors.Join(steps.errs...)
}

// publish adds ev to the session's event log, marked with the context it
// comes from.
func (s *Kernel) publish(ev Event) Event {
	ev.Context = s.contextID
	return s.hub.publish(ev)
}
