package sessions

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/cleanup"
	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
)

// Manager owns every session. It is safe for concurrent use. Run drives
// expiry; Close deletes every session and must be called once.
type Manager struct {
	cfg       Config
	rt        Runtime
	log       zerolog.Logger
	budget    *Budget
	starts    *fairSlots // a slot per kernel start in progress, shared fairly by tenants
	slots     *execSlots
	notify    *workspace.Inotify // shared by every session's change tracking
	store     Store
	pool      *pool
	egress    *egress.Service
	templates map[string]Template // the built-in ones and Config.Templates; never changed

	adoptions keyedLock // one adoption of a session at a time (adoptOrphan)

	mu       sync.Mutex
	sessions map[string]*Session
	// ending holds the sessions taken out of sessions to be closed, until
	// their sandbox is gone: a close under way, or one whose sandbox
	// could not be removed (left, retried by the reaper). They count
	// against the caps; the left ones are listed, dead.
	ending   map[string]*closingSession
	starting map[string]int // tenant → sessions being created
	closed   bool
	closing  sync.WaitGroup // sessions being deleted
	fences   sync.WaitGroup // watchFence's goroutines
	pausing  sync.WaitGroup // the reaper's freezes in progress (pauseIdle)
}

// New returns a manager that starts kernels with rt.
func New(cfg Config, rt Runtime, log zerolog.Logger) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, fmt.Errorf("sessions: nil runtime")
	}
	cfg = cfg.withDefaults()
	eg, err := egress.NewService(cfg.Egress, log)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	m := &Manager{cfg: cfg, rt: rt, log: log, budget: NewBudget(cfg.MemoryBudget, cfg.budgetShares()), starts: newFairSlots(cfg.MaxConcurrentStarts),
		egress: eg, sessions: make(map[string]*Session), ending: make(map[string]*closingSession), starting: make(map[string]int)}
	m.pool = newPool(cfg.Pool, m.startPooled, log)
	m.slots = newExecSlots(cfg.ExecSlots, cfg.ExecSlotLease)
	m.notify = workspace.NewInotify(0)
	m.store = cfg.Store
	m.templates = builtinTemplates()
	for name, t := range cfg.Templates {
		t.Name = name
		m.templates[name] = t
	}
	if err := m.validateTemplates(); err != nil {
		return nil, err
	}
	checkHostLimits(cfg, log)
	return m, nil
}

// Config returns the effective configuration (defaults filled in).
func (m *Manager) Config() Config { return m.cfg }

// Budget returns the gateway-wide output budget (for health and metrics).
func (m *Manager) Budget() *Budget { return m.budget }

// RuntimeName names the runtime sessions run on.
func (m *Manager) RuntimeName() string { return m.rt.Name() }

// CreateOptions are the per-session choices of POST /v1/sessions.
type CreateOptions struct {
	// Kernel is the language of the session's first context: a kernel
	// name or alias (ResolveKernel); "" is sandbox.DefaultKernel.
	Kernel      string
	Env         map[string]string
	IdleTimeout time.Duration  // 0 = default
	Limits      sandbox.Limits // checked by Limits.Validate; capped by the runtime's maxima
	// Network is what the kernel may reach through the session's egress
	// proxy; the zero value is no network at all. It must stay within the
	// operator's ceiling (Config.Egress.Allow).
	Network Network
	// Template names the preset whose language, limits, network, idle
	// timeout and env fill the fields above left unset; "" is "default".
	Template string
	// Metadata is the client's, stored with the session (CheckMetadata's
	// bounds).
	Metadata map[string]string
	// Lifetime: the session is deleted this long after creation; 0 is
	// Config.MaxLifetime, more is refused.
	Lifetime time.Duration
}

// Create returns a new session of tenant once its kernel answers. A
// session asking for nothing special (no env, default limits, no network) takes a
// pre-started kernel from the warm pool, in about a millisecond; any other
// starts cold, waiting for its turn among MaxConcurrentStarts (about half a
// second for the start itself). The session's id is its sandbox's.
func (m *Manager) Create(ctx context.Context, tenant string, opts CreateOptions) (*Session, error) {
	opts, err := m.applyTemplate(opts)
	if err != nil {
		return nil, err
	}
	if err := CheckMetadata(opts.Metadata); err != nil {
		return nil, err
	}
	if opts.Lifetime < 0 || opts.Lifetime > m.cfg.MaxLifetime {
		return nil, invalid("lifetime must be within 0..%v", m.cfg.MaxLifetime)
	}
	idle := opts.IdleTimeout
	if idle == 0 {
		idle = m.cfg.IdleTimeout
	}
	if idle < time.Second || idle > m.cfg.MaxIdleTimeout {
		return nil, invalid("idle timeout must be within 1s..%v", m.cfg.MaxIdleTimeout)
	}
	kernelName, err := m.ResolveKernel(opts.Kernel)
	if err != nil {
		return nil, err
	}
	spec := sandbox.Spec{ID: newSessionID(), Env: opts.Env, Limits: opts.Limits}
	if kernelName != sandbox.DefaultKernel {
		spec.Kernel = kernelName // the zero spec (the default kernel) is what the pool holds
	}
	if sandbox.TenantPattern.MatchString(tenant) {
		spec.Tenant = tenant // recorded by runtimes whose sandboxes outlive the gateway
	}
	if err := spec.Validate(); err != nil {
		var se *sandbox.SpecError
		if errors.As(err, &se) {
			return nil, &InvalidError{Reason: se.Public(), Err: err}
		}
		return nil, &InvalidError{Reason: "invalid session spec", Err: err}
	}
	policy, err := m.admitNetwork(opts.Network)
	if err != nil {
		return nil, err
	}
	if err := m.reserve(tenant); err != nil {
		return nil, err
	}
	defer m.unreserve(tenant)

	start := time.Now()
	// A session with a network gets its proxy first (the sandbox binds its
	// socket), and so never a pooled kernel: those have the zero spec.
	var proxy *egress.Proxy
	var created atomic.Pointer[Session] // tells the proxy's refusals to the session once it exists
	if !policy.Empty() {
		if proxy, err = m.egress.Start(spec.ID, policy, networkNotifier(&created)); err != nil {
			return nil, fmt.Errorf("sessions: create: %w: %w", sandbox.ErrUnavailable, err)
		}
		spec.EgressSocket = proxy.Socket()
	}
	k, pooled := m.pool.take(spec)
	if !pooled {
		if k, err = m.startKernel(ctx, tenant, spec); err != nil {
			if proxy != nil {
				_ = proxy.Close()
			}
			return nil, fmt.Errorf("sessions: create: %w", err)
		}
	}
	if tr, ok := k.sb.(sandbox.TenantRecorder); ok && pooled && spec.Tenant != "" {
		if err := tr.RecordTenant(ctx, spec.Tenant); err != nil { // only another gateway's adoption needs it
			m.log.Warn().Err(err).Str("session", k.sb.ID()).Msg("recording the tenant of a pooled sandbox failed")
		}
	}
	id := k.sb.ID()
	s := newSession(sessionParams{id: id, tenant: tenant, runtime: m.rt.Name(), cfg: m.cfg, log: m.log,
		idle: idle, budget: m.budget.Account(tenant), slots: m.slots, sandbox: k.sb, client: k.conn, files: k.files, watch: k.watch, egress: proxy, persist: m.persist,
		kernel: kernelName, installed: m.InstalledKernels(), template: opts.Template, metadata: copyMetadata(opts.Metadata),
		endAt: lifetimeEnd(opts.Lifetime)})
	created.Store(s)
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.sessions[id] = s
	}
	m.mu.Unlock()
	if closed {
		_ = s.close(context.WithoutCancel(ctx), "gateway shutting down")
		return nil, ErrClosed
	}
	m.watchFence(s)
	m.persist(s)
	m.cfg.Observer.SessionCreated(pooled)
	m.log.Info().Str("session", id).Str("tenant", tenant).Bool("pooled", pooled).Dur("start", time.Since(start)).Msg("session created")
	return s, nil
}

// readyKernel is a started sandbox with a connected kernel and an opened
// workspace: what a session is made of. Whoever holds one owns it and
// must either hand it to a session or close it.
type readyKernel struct {
	sb    sandbox.Sandbox
	conn  KernelConn
	files workspace.FS
	watch workspace.Tracker // may be nil
}

// close releases everything, last made first.
func (k *readyKernel) close(ctx context.Context) {
	if k.watch != nil {
		_ = k.watch.Close()
	}
	_ = k.files.Close()
	_ = k.conn.Close()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = k.sb.Close(cctx)
}

// startKernel starts a sandbox for spec, dials its kernel and opens its
// workspace, for tenant ("" for the warm pool). At most
// Config.MaxConcurrentStarts run at once; the others wait their turn
// (bounded by ctx), shared fairly between tenants (fairSlots): a tenant
// creating many sessions at once makes another's wait for the next start
// to end, not behind all of its own. A failure or a panic at any step
// undoes every step before it: the sandbox is closed, its slot, uid and
// cgroup freed.
func (m *Manager) startKernel(ctx context.Context, tenant string, spec sandbox.Spec) (_ *readyKernel, err error) {
	release, err := m.starts.acquire(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("waiting for a kernel start: %w", err)
	}
	defer release()
	var undo cleanup.Stack
	defer undo.Unwind(&err)
	sctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	sb, err := m.rt.Start(sctx, spec)
	if err != nil {
		return nil, err
	}
	undo.Push("close sandbox", func() error {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer ccancel()
		return sb.Close(cctx)
	})
	log := m.log.With().Str("session", sb.ID()).Logger()
	c, err := m.cfg.Dial(sctx, sb.Connection(), m.cfg.Kernel, log)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	undo.Push("disconnect kernel", c.Close)
	files, watch, err := m.openWorkspace(sctx, sb, log)
	if err != nil {
		return nil, err
	}
	undo.Release() // the ready kernel owns them all now
	return &readyKernel{sb: sb, conn: c, files: files, watch: watch}, nil
}

// openWorkspace opens a sandbox's workspace and its change tracker: the
// sandbox's own when it has one (a workspace not on this host), else the
// host directory it names, tracked on the manager's shared inotify
// instances. Without a tracker the session is not created: file events
// are never silently off.
func (m *Manager) openWorkspace(ctx context.Context, sb sandbox.Sandbox, log zerolog.Logger) (workspace.FS, workspace.Tracker, error) {
	if o, ok := sb.(sandbox.WorkspaceOpener); ok {
		return o.OpenWorkspace(ctx)
	}
	root, err := workspace.Open(sb.Workspace())
	if err != nil {
		return nil, nil, err
	}
	w, err := m.notify.Watch(root, m.cfg.WatchDirs, m.cfg.WatchPaths)
	if err != nil {
		_ = root.Close()
		return nil, nil, fmt.Errorf("%w: tracking workspace changes: %w", sandbox.ErrUnavailable, err)
	}
	return root, w, nil
}

func (m *Manager) reserve(tenant string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	total, mine := len(m.sessions)+len(m.ending), m.starting[tenant]
	for _, n := range m.starting {
		total += n
	}
	for _, s := range m.sessions {
		if s.tenant == tenant {
			mine++
		}
	}
	for _, e := range m.ending { // a sandbox still there still counts
		if e.s.tenant == tenant {
			mine++
		}
	}
	if total >= m.cfg.MaxSessions {
		return fmt.Errorf("%w: %d sessions in total", ErrTooManySessions, m.cfg.MaxSessions)
	}
	if mine >= m.cfg.MaxSessionsPerTenant {
		return fmt.Errorf("%w: %d sessions per key", ErrTooManySessions, m.cfg.MaxSessionsPerTenant)
	}
	m.starting[tenant]++
	return nil
}

func (m *Manager) unreserve(tenant string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.starting[tenant]--; m.starting[tenant] <= 0 {
		delete(m.starting, tenant)
	}
}

// Get returns tenant's session id. Another tenant's session is ErrNotFound.
func (m *Manager) Get(tenant, id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || s.tenant != tenant {
		return nil, ErrNotFound
	}
	return s, nil
}

// List returns tenant's sessions, oldest first.
func (m *Manager) List(tenant string) []Info {
	m.mu.Lock()
	var mine []*Session
	for _, e := range m.ending { // a sandbox a close left is listed (dead) until it is gone
		if e.err != nil && e.s.tenant == tenant {
			mine = append(mine, e.s)
		}
	}
	for _, s := range m.sessions {
		if s.tenant == tenant {
			mine = append(mine, s)
		}
	}
	m.mu.Unlock()
	infos := make([]Info, 0, len(mine))
	for _, s := range mine {
		infos = append(infos, s.Info())
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].CreatedAt.Before(infos[j].CreatedAt) })
	return infos
}

// Delete kills tenant's session id and waits until its sandbox is gone.
func (m *Manager) Delete(ctx context.Context, tenant, id string) error {
	s, err := m.take(tenant, id)
	if err != nil {
		return err
	}
	defer m.closing.Done()
	if err := m.end(ctx, s, "session deleted"); err != nil {
		return err
	}
	m.log.Info().Str("session", id).Msg("session deleted")
	return nil
}

// take removes a session from the map so no new call finds it.
func (m *Manager) take(tenant, id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || (tenant != "" && s.tenant != tenant) {
		return nil, ErrNotFound
	}
	delete(m.sessions, id)
	m.ending[id] = &closingSession{s: s}
	m.closing.Add(1)
	return s, nil
}

// closingSession is a session being closed, or whose sandbox was left (err).
type closingSession struct {
	s        *Session
	err      error // the failed close, once it failed
	retrying bool  // a retry of the sandbox's close is under way
}

// end closes s, taken out of the sessions (take, takeAll), and forgets it
// once its sandbox is gone. A close that could not remove the sandbox
// keeps s in ending, listed dead and counted against the caps, with its
// store record, for the reaper to try again (retryLeft); the error says
// so. Safe for concurrent use on distinct sessions.
func (m *Manager) end(ctx context.Context, s *Session, reason string) error {
	err := s.close(ctx, reason)
	if errors.Is(err, ErrSandboxLeft) {
		m.mu.Lock()
		if e := m.ending[s.id]; e != nil {
			e.err = err
		} else {
			m.ending[s.id] = &closingSession{s: s, err: err}
		}
		m.mu.Unlock()
		m.log.Error().Err(err).Str("session", s.id).Msg("session closed but its sandbox is left; it stays listed and will be retried")
		return err
	}
	if err != nil { // a step failed; nothing of the sandbox is left
		m.log.Error().Err(err).Str("session", s.id).Msg("session close: a step failed")
	}
	m.mu.Lock()
	delete(m.ending, s.id)
	m.mu.Unlock()
	m.forget(s.id)
	return nil
}

// retryLeft tries again to remove the sandboxes that closes left, each in
// a goroutine of its own (one at a time per session) that the manager's
// closing group waits for.
func (m *Manager) retryLeft(ctx context.Context) {
	m.mu.Lock()
	var left []*closingSession
	for _, e := range m.ending {
		if e.err != nil && !e.retrying {
			e.retrying = true
			m.closing.Add(1)
			left = append(left, e)
		}
	}
	m.mu.Unlock()
	for _, e := range left {
		go func() {
			defer m.closing.Done()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			err := e.s.sandbox.Close(cctx)
			m.mu.Lock()
			e.retrying = false
			if err != nil {
				e.err = fmt.Errorf("%w: %w", ErrSandboxLeft, err)
			} else {
				delete(m.ending, e.s.id)
			}
			m.mu.Unlock()
			if err == nil {
				m.forget(e.s.id)
				m.log.Info().Str("session", e.s.id).Msg("a left sandbox is gone at last")
			}
		}()
	}
}

// Run deletes expired sessions, pauses idle ones, keeps the warm pool
// full and, on a runtime that finds orphaned sandboxes
// (sandbox.OrphanFinder), adopts them, until ctx ends; it returns once its
// loops and the freezes it started have stopped.
func (m *Manager) Run(ctx context.Context) error {
	defer m.pausing.Wait() // its freezes end with ctx
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the warm pool's refills, owned by Run
		defer wg.Done()
		m.pool.run(ctx)
	}()
	if finder, ok := m.rt.(sandbox.OrphanFinder); ok {
		wg.Add(1)
		go func() { // adoption of other gateways' sessions, owned by Run
			defer wg.Done()
			t := time.NewTicker(m.cfg.AdoptInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					m.adoptOrphans(ctx, finder)
				}
			}
		}()
	}
	defer wg.Wait()
	t := time.NewTicker(m.cfg.ReapInterval)
	defer t.Stop()
	flush := time.NewTicker(m.cfg.FlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			m.reap(ctx, now)
		case <-flush.C:
			m.flush()
		}
	}
}

// forget removes a deleted or expired session from the store.
func (m *Manager) forget(id string) {
	if err := m.store.Delete(id); err != nil {
		m.log.Warn().Err(err).Str("session", id).Msg("session store write failed")
	}
}

// Pool describes the warm pool now.
func (m *Manager) Pool() PoolState { return m.pool.State() }

// reap deletes the expired sessions and pauses the idle ones. It never
// waits for a session: each close and each freeze runs in a goroutine of
// its own, so that one slow or stuck sandbox holds up neither the next
// tick nor any other session.
func (m *Manager) reap(ctx context.Context, now time.Time) {
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	for _, s := range all {
		reason := s.expired(now)
		if reason == "" {
			m.pauseIdle(ctx, s, now)
			continue
		}
		if _, err := m.take("", s.id); err != nil {
			continue
		}
		m.log.Info().Str("session", s.id).Str("reason", reason).Msg("session expired")
		go func() { // one slow sandbox must not hold up the others' expiry
			defer m.closing.Done()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = m.end(cctx, s, reason) // end logs a failure
		}()
	}
	m.retryLeft(ctx)
}

// pauseTimeout bounds a freeze the reaper starts, whatever the runtime's
// own bound (the local runtime's FreezeTimeout, docker's call timeout).
const pauseTimeout = 30 * time.Second

// pauseIdle freezes s if its kernel has gone unused for PauseAfter, in a
// goroutine owned by the manager (Run, Close and Detach wait for it). It
// does not block: a session with a freeze still in progress is skipped,
// so there is at most one per session. The freeze ends with ctx, with
// the session's close, or after pauseTimeout.
func (m *Manager) pauseIdle(ctx context.Context, s *Session, now time.Time) {
	if !s.pause.claim() {
		return
	}
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.pausing.Add(1)
	}
	m.mu.Unlock()
	if closed {
		s.pause.unclaim()
		return
	}
	go func() {
		defer m.pausing.Done()
		defer s.pause.unclaim()
		pctx, cancel := context.WithTimeout(ctx, pauseTimeout)
		defer cancel()
		stop := context.AfterFunc(s.ctx, cancel) // the session closes: stop freezing it
		defer stop()
		s.pause.maybeFreeze(pctx, now)
	}()
}

// takeAll closes the manager to new sessions and takes every session out
// of it, for the caller to end.
func (m *Manager) takeAll() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	all := make([]*Session, 0, len(m.sessions))
	for id, s := range m.sessions {
		all = append(all, s)
		delete(m.sessions, id)
		m.ending[id] = &closingSession{s: s}
	}
	return all
}

// Close deletes every session, in parallel, and refuses new ones. It
// returns when every sandbox is gone or ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	m.pool.close(ctx)
	all := m.takeAll()
	m.retryLeft(ctx) // the sandboxes earlier closes left: once more
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = m.end(ctx, s, "gateway shutting down")
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		m.closing.Wait()
		m.pausing.Wait()
		m.fences.Wait()
		close(done)
	}()
	select {
	case <-done:
		return m.notify.Close()
	case <-ctx.Done():
		return fmt.Errorf("sessions: close: %w (some sandboxes may still be stopping)", ctx.Err())
	}
}

// Stats is a snapshot of the manager for metrics.
type Stats struct {
	Runtime       string
	ByState       map[State]int
	Queued        int
	Pool          PoolState
	BudgetUsed    int64
	BudgetMax     int64
	StartsActive  int
	StartsWaiting int // kernel starts waiting for a start slot
	SlotWaiting   int // executions waiting for a slot of the fair scheduler
}

// Stats returns the manager's state now.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	st := Stats{Runtime: m.rt.Name(), ByState: map[State]int{}, Pool: m.pool.State(),
		BudgetUsed: m.budget.Used(), BudgetMax: m.budget.Max(), StartsActive: m.starts.active(), StartsWaiting: m.starts.waiting(),
		SlotWaiting: m.slots.Waiting()}
	for _, s := range all {
		st.ByState[s.Info().State]++
		st.Queued += int(s.queued.Load())
	}
	return st
}

// fencedReason is what clients of a session another gateway took over
// are told (its events end with it: they reconnect, and their requests
// go to that gateway).
const fencedReason = "the session moved to another gateway replica (this one lost its lease): reconnect"

// watchFence starts, for a session whose sandbox another gateway can
// take over (sandbox.Fenceable), the goroutine that lets the session go
// once the sandbox refuses this gateway: it is forgotten here and its
// sandbox detached, never deleted. The goroutine ends with the session;
// Close and Detach wait for it.
func (m *Manager) watchFence(s *Session) {
	f, ok := s.sandbox.(sandbox.Fenceable)
	if !ok {
		return
	}
	m.fences.Add(1)
	go func() {
		defer m.fences.Done()
		select {
		case <-f.Fenced():
		case <-s.ctx.Done():
			return
		}
		m.mu.Lock()
		mine := m.sessions[s.id] == s
		if mine {
			delete(m.sessions, s.id)
		}
		m.mu.Unlock()
		if !mine {
			return
		}
		m.forget(s.id)
		m.log.Warn().Str("session", s.id).Msg("another gateway took the session over: letting it go")
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StartTimeout)
		defer cancel()
		if err := s.detachWith(ctx, fencedReason); err != nil {
			m.log.Warn().Err(err).Str("session", s.id).Msg("letting a fenced session go")
		}
	}()
}
