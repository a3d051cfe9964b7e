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

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
)

// State is a session's kernel state.
type State string

// Session states.
const (
	StateIdle       State = "idle"
	StateBusy       State = "busy"
	StateRestarting State = "restarting"
	StateDead       State = "dead"
)

// Info is the public description of a session.
type Info struct {
	ID           string        `json:"id"`
	State        State         `json:"state"`
	Runtime      string        `json:"runtime"`
	CreatedAt    time.Time     `json:"created_at"`
	ExpiresAt    time.Time     `json:"expires_at"`
	IdleTimeoutS int           `json:"idle_timeout_s"`
	Queued       int           `json:"queued"`
	Limits       kernel.Limits `json:"limits"`
}

// Session is one tenant's persistent kernel. Its methods are safe for
// concurrent use. Executions run one at a time in submission order.
type Session struct {
	id      string
	tenant  string
	runtime string
	cfg     Config
	log     zerolog.Logger
	created time.Time
	idle    time.Duration

	sandbox kernel.Sandbox
	files   *workspace.Root
	watch   *workspace.Watcher // used by the worker only; nil if inotify is unavailable
	hub     *hub
	queue   chan *job
	restart chan chan error

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	state        State
	client       *kernel.Client
	current      *job   // running execution
	inputPending string // execution id waiting for input
	clients      int    // attached WebSocket clients
	lastActive   time.Time
	closeReason  string

	stopWatch context.CancelFunc // ends the current kernel watcher
	queued    atomic.Int32
}

// newSessionID returns 128 random bits in hex.
func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("sessions: crypto/rand failed: %v", err))
	}
	return hex.EncodeToString(b[:])
}

func newSession(id, tenant, runtime string, cfg Config, log zerolog.Logger, idle time.Duration, sb kernel.Sandbox, c *kernel.Client, files *workspace.Root) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	s := &Session{
		id: id, tenant: tenant, runtime: runtime, cfg: cfg, log: log.With().Str("session", id).Logger(),
		created: now, idle: idle, sandbox: sb, files: files,
		hub:     newHub(cfg.BacklogEvents, cfg.BacklogBytes),
		queue:   make(chan *job, cfg.QueueDepth),
		restart: make(chan chan error),
		ctx:     ctx, cancel: cancel,
		state: StateIdle, client: c, lastActive: now,
	}
	w, err := workspace.NewWatcher(files, cfg.WatchDirs, cfg.WatchPaths)
	if err != nil {
		s.log.Warn().Err(err).Msg("workspace changes will not be reported")
	} else {
		s.watch = w
	}
	s.watchKernel(c)
	s.wg.Add(1)
	go s.worker()
	return s
}

// Files returns the session's workspace. File calls do not go through the
// execution queue: they work while code runs.
func (s *Session) Files() *workspace.Root {
	s.Touch()
	return s.files
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Workspace returns the host path of the session's workspace.
func (s *Session) Workspace() string { return s.sandbox.Workspace() }

// Info describes the session now.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Info{
		ID: s.id, State: s.state, Runtime: s.runtime, CreatedAt: s.created,
		ExpiresAt: s.expiresAtLocked(), IdleTimeoutS: int(s.idle / time.Second),
		Queued: int(s.queued.Load()), Limits: s.sandbox.Limits(),
	}
}

func (s *Session) expiresAtLocked() time.Time {
	exp := s.lastActive.Add(s.idle)
	if end := s.created.Add(s.cfg.MaxLifetime); end.Before(exp) {
		exp = end
	}
	return exp
}

// expired reports why the session should be deleted now, or "".
func (s *Session) expired(now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.created.Add(s.cfg.MaxLifetime)) {
		return "maximum lifetime reached"
	}
	if s.state != StateBusy && s.queued.Load() == 0 && now.After(s.lastActive.Add(s.idle)) {
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

func (s *Session) setState(st State, reason string) {
	s.mu.Lock()
	changed := s.state != st
	s.state = st
	s.mu.Unlock()
	if changed {
		s.hub.publish(Event{Type: EventKernel, State: string(st), Reason: reason})
	}
}

func (s *Session) kernelClient() *kernel.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// Subscribe returns the session's events after seq since (0 for the whole
// backlog), then live events. The caller must Close the subscription.
func (s *Session) Subscribe(since int64) *Subscription {
	sub := s.hub.subscribe(since, s.cfg.SubscriberBuffer)
	return sub
}

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
func (s *Session) LastSeq() int64 {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.hub.seq
}

// ExecRequest asks for one execution.
type ExecRequest struct {
	// ID names the execution in events; a random one is chosen if empty.
	ID   string
	Code string
	// Timeout lowers (or, up to the server maximum, raises) the default.
	Timeout time.Duration
	// AllowStdin lets the code call input(); answers come through Input.
	AllowStdin bool
}

func (s *Session) validate(req *ExecRequest) error {
	if req.ID == "" {
		req.ID = newSessionID()
	}
	if len(req.ID) > 128 {
		return fmt.Errorf("%w: execution id longer than 128 bytes", ErrInvalid)
	}
	if len(req.Code) > s.cfg.MaxCodeBytes {
		return fmt.Errorf("%w: code of %d bytes exceeds %d", ErrInvalid, len(req.Code), s.cfg.MaxCodeBytes)
	}
	if req.Timeout < 0 || req.Timeout > s.cfg.MaxExecTimeout {
		return fmt.Errorf("%w: timeout must be within 0..%v", ErrInvalid, s.cfg.MaxExecTimeout)
	}
	if req.Timeout == 0 {
		req.Timeout = s.cfg.ExecTimeout
	}
	return nil
}

// Submit queues an execution without waiting for it; its events go to
// subscribers. It fails with ErrQueueFull when the queue is full.
func (s *Session) Submit(req ExecRequest) (string, error) {
	j, err := s.enqueue(req, false)
	if err != nil {
		return "", err
	}
	return j.req.ID, nil
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
	if err := s.validate(&req); err != nil {
		return nil, err
	}
	j := &job{req: req, collect: collect, result: make(chan *Execution, 1), exec: &Execution{ID: req.ID, Outputs: []Event{}, Files: []FileChange{}}}
	if s.ctx.Err() != nil {
		return nil, ErrClosed
	}
	// s.mu is held across the hand-off so the worker cannot publish this
	// job's "started" before its "queued", and close cannot miss the job.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil, ErrClosed
	}
	pos := int(s.queued.Add(1))
	select {
	case s.queue <- j:
	default:
		s.queued.Add(-1)
		return nil, fmt.Errorf("%w: %d executions waiting", ErrQueueFull, cap(s.queue))
	}
	s.lastActive = time.Now()
	if s.current != nil || pos > 1 {
		s.hub.publish(Event{Type: EventQueued, ID: req.ID, Position: ptr(pos)})
	}
	return j, nil
}

// Interrupt interrupts the running execution, if any.
func (s *Session) Interrupt(ctx context.Context) error {
	s.Touch()
	s.mu.Lock()
	if s.current != nil {
		s.current.interrupted.Store(true)
	}
	c := s.client
	s.mu.Unlock()
	if err := c.Interrupt(ctx); err != nil {
		return fmt.Errorf("sessions: interrupt: %w", err)
	}
	return nil
}

// Input answers the input() call of execution id.
func (s *Session) Input(id, value string) error {
	s.Touch()
	s.mu.Lock()
	pending := s.inputPending
	if pending == id && id != "" {
		s.inputPending = ""
	}
	c := s.client
	s.mu.Unlock()
	if pending == "" || pending != id {
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

// watchKernel starts the goroutine that declares c dead when the sandbox's
// kernel process exits. It is stopped by the next watchKernel or by close.
func (s *Session) watchKernel(c *kernel.Client) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.stopWatch = cancel
	exited := s.sandbox.Exited()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-exited:
			c.Abort(&ExitError{Reason: s.sandbox.ExitReason()})
		case <-ctx.Done():
		}
	}()
}

// ExitError is the cause of death when the kernel process exited.
type ExitError struct{ Reason string }

func (e *ExitError) Error() string { return "kernel process exited: " + e.Reason }

// worker owns the kernel: it runs executions and restarts.
func (s *Session) worker() {
	defer s.wg.Done()
	defer func() {
		// A bug must cost this session, never the gateway.
		if r := recover(); r != nil {
			s.log.Error().Interface("panic", r).Msg("session worker panicked; session is dead")
			s.setState(StateDead, "internal error")
			s.drain()
		}
	}()
	for {
		c := s.kernelClient()
		select {
		case <-s.ctx.Done():
			s.drain()
			return
		case j := <-s.queue:
			s.run(j)
		case done := <-s.restart:
			done <- s.restartKernel("restart requested")
		case <-c.Done():
			if s.Info().State == StateDead {
				// Restarting failed before; wait for a request or close.
				select {
				case <-s.ctx.Done():
				case done := <-s.restart:
					done <- s.restartKernel("restart requested")
				case j := <-s.queue:
					s.fail(j, "died", "kernel is dead")
				}
				continue
			}
			s.recoverKernel(c)
		}
	}
}

// drain fails every queued execution when the session closes. Taking
// s.mu orders it with enqueue, which checks the context under it.
func (s *Session) drain() {
	reason := s.reason()
	s.mu.Lock()
	var jobs []*job
	for done := false; !done; {
		select {
		case j := <-s.queue:
			jobs = append(jobs, j)
		default:
			done = true
		}
	}
	s.mu.Unlock()
	for _, j := range jobs {
		s.queued.Add(-1)
		s.fail(j, StatusDied, reason)
	}
}

func (s *Session) reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeReason != "" {
		return s.closeReason
	}
	return "session closed"
}

// recoverKernel restarts a kernel that died on its own.
func (s *Session) recoverKernel(c *kernel.Client) {
	reason := s.exitReason(c.Err())
	s.log.Info().Str("reason", reason).Msg("kernel died; restarting")
	s.setState(StateDead, reason)
	_ = s.restartKernel("kernel died: " + reason)
}

func deathReason(err error) string {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Reason
	}
	if err == nil {
		return "unknown"
	}
	return err.Error()
}

var errRestarting = errors.New("sessions: kernel restarting")

// restartKernel replaces the kernel process and its client. Worker only.
func (s *Session) restartKernel(reason string) error {
	s.setState(StateRestarting, reason)
	old := s.kernelClient()
	s.stopWatch()
	old.Abort(errRestarting)
	old.Close()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.StartTimeout)
	defer cancel()
	err := s.sandbox.Restart(ctx)
	var c *kernel.Client
	if err == nil {
		c, err = kernel.Dial(ctx, s.sandbox.Connection(), s.cfg.Kernel, s.log)
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("kernel restart failed")
		s.mu.Lock()
		s.client = old // dead; calls fail with ErrDead
		s.mu.Unlock()
		s.watchKernel(old)
		s.setState(StateDead, "restart failed: "+err.Error())
		return fmt.Errorf("%w: restart: %v", ErrKernelDead, err)
	}
	s.mu.Lock()
	s.client = c
	s.mu.Unlock()
	s.watchKernel(c)
	s.setState(StateIdle, "")
	return nil
}

// close stops the worker, kills the kernel and ends all subscriptions.
func (s *Session) close(ctx context.Context, reason string) {
	s.mu.Lock()
	if s.closeReason == "" {
		s.closeReason = reason
	}
	s.mu.Unlock()
	s.cancel()
	// Kill the kernel first: nothing the code does can then keep the
	// worker busy while we wait for it.
	if err := s.sandbox.Close(ctx); err != nil {
		s.log.Warn().Err(err).Msg("sandbox close failed")
	}
	s.wg.Wait()
	s.drain() // jobs queued while the worker was stopping
	s.kernelClient().Close()
	if s.watch != nil {
		s.watch.Close()
	}
	s.files.Close()
	s.mu.Lock()
	s.state = StateDead
	s.mu.Unlock()
	s.hub.publish(Event{Type: EventKernel, State: string(StateDead), Reason: reason})
	s.hub.close()
}
