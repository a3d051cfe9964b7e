package sessions

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

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
	launch    *launcher // starts sandboxes with their kernels and workspaces
	slots     *execSlots
	records   *records // the sessions' records in the store
	pool      *pool
	networks  *networks   // admits network lists and runs the egress proxies
	templates templateSet // the built-in ones and Config.Templates; never changed

	adoptions keyedLock // one adoption of a session at a time (adoptOrphan)

	clock   *reapClock     // when the reaper runs next
	table   *table         // the sessions: live, ending (being closed or left), starting
	closing sync.WaitGroup // sessions being deleted
	fences  sync.WaitGroup // watchFence's goroutines
	pausing sync.WaitGroup // the reaper's freezes in progress (pauseIdle)

	snaps      *Snapshots  // nil without Config.Snapshots
	hibernated *hibernated // the sessions hibernated (hibernate.go)
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
	m := &Manager{cfg: cfg, rt: rt, log: log, budget: NewBudget(cfg.MemoryBudget, cfg.budgetShares()),
		launch:   &launcher{cfg: cfg, rt: rt, log: log, starts: newFairSlots(cfg.MaxConcurrentStarts), notify: workspace.NewInotify(0)},
		networks: &networks{egress: eg, log: log}}
	m.table = newTable(&m.closing)
	m.hibernated = newHibernated()
	if cfg.Snapshots != nil {
		m.snaps = &Snapshots{mgr: m, store: cfg.Snapshots, log: log.With().Str("component", "snapshots").Logger()}
	}
	m.clock = newReapClock(cfg.ReapInterval)
	m.pool = newPool(cfg.Pool, m.launch.startPooled, log)
	m.slots = newExecSlots(cfg.ExecSlots, cfg.ExecSlotLease)
	m.records = &records{store: cfg.Store, log: log, flushed: cfg.Observer.StoreFlushed}
	m.templates = builtinTemplates()
	for name, t := range cfg.Templates {
		t.Name = name
		m.templates[name] = t
	}
	if err := m.templates.validate(cfg.MaxIdleTimeout, m.networks.admit); err != nil {
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

// Get returns tenant's session id. Another tenant's session is ErrNotFound.
func (m *Manager) Get(tenant, id string) (*Session, error) {
	s := m.table.get(id)
	if s == nil || s.tenant != tenant {
		if rec, ok := m.hibernated.get(tenant, id); ok {
			return nil, &HibernatedError{Info: hibernatedInfo(rec), AutoResume: rec.AutoResume}
		}
		return nil, ErrNotFound
	}
	return s, nil
}

// HostGranted returns session id of m whatever its tenant: for a preview
// host's tag, which names the session itself, signed by the gateway and
// checked by the caller. ErrNotFound when there is none, and
// ErrPrivatePreviews when its previews are private (its host is no grant
// then: CreateOptions.PrivatePreviews). It is no method of Manager's,
// whose lookups all check the tenant, so that each use of it stands out.
func HostGranted(m *Manager, id string) (*Session, error) {
	s := m.table.get(id)
	switch {
	case s == nil:
		return nil, ErrNotFound
	case s.privatePreviews:
		return nil, ErrPrivatePreviews
	}
	return s, nil
}

// List returns tenant's sessions, oldest first.
func (m *Manager) List(tenant string) []Info {
	mine := m.table.listed(tenant)
	infos := make([]Info, 0, len(mine))
	for _, s := range mine {
		infos = append(infos, s.Info())
	}
	infos = append(infos, hibernatedSessions(m, tenant)...)
	sort.Slice(infos, func(i, j int) bool { return infos[i].CreatedAt.Before(infos[j].CreatedAt) })
	return infos
}

// Delete kills tenant's session id and waits until its sandbox is gone.
func (m *Manager) Delete(ctx context.Context, tenant, id string) error {
	s, err := m.table.take(tenant, id)
	if errors.Is(err, ErrNotFound) {
		switch rec, ok, busy := m.hibernated.take(tenant, id); {
		case busy:
			return fmt.Errorf("%w: it is being woken; delete it once it is", ErrHibernated)
		case ok:
			forgetHibernated(m, rec, "session deleted")
			return nil
		}
	}
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

// end closes s, taken out of the sessions (take, takeAll), and forgets it
// once its sandbox is gone. A close that could not remove the sandbox
// keeps s in ending, listed dead and counted against the caps, with its
// store record, for the reaper to try again (retryLeft); the error says
// so. Safe for concurrent use on distinct sessions.
func (m *Manager) end(ctx context.Context, s *Session, reason string) error {
	err := s.close(ctx, reason)
	if errors.Is(err, ErrSandboxLeft) {
		m.table.ended(s, err)
		m.log.Error().Err(err).Str("session", s.id).Msg("session closed but its sandbox is left; it stays listed and will be retried")
		return err
	}
	if err != nil { // a step failed; nothing of the sandbox is left
		m.log.Error().Err(err).Str("session", s.id).Msg("session close: a step failed")
	}
	m.table.ended(s, nil)
	if !s.hibernating.Load() { // a hibernated session's record is its hibernation's
		m.records.forget(s.id)
	}
	return nil
}

// Pool describes the warm pool now.
func (m *Manager) Pool() PoolState { return m.pool.State() }

// Close deletes every session, in parallel, and refuses new ones. It
// returns when every sandbox is gone or ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	m.pool.close(ctx)
	all := m.table.takeAll()
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
		return m.launch.notify.Close()
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
	all := m.table.snapshot()
	st := Stats{Runtime: m.rt.Name(), ByState: map[State]int{}, Pool: m.pool.State(),
		BudgetUsed: m.budget.Used(), BudgetMax: m.budget.Max(), StartsActive: m.launch.starts.active(), StartsWaiting: m.launch.starts.waiting(),
		SlotWaiting: m.slots.Waiting()}
	for _, s := range all {
		st.ByState[s.Info().State]++
		st.Queued += int(s.first.queued.Load())
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
		if !m.table.release(s) {
			return
		}
		m.records.forget(s.id)
		m.log.Warn().Str("session", s.id).Msg("another gateway took the session over: letting it go")
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StartTimeout)
		defer cancel()
		if err := s.detach(ctx, fencedReason); err != nil {
			m.log.Warn().Err(err).Str("session", s.id).Msg("letting a fenced session go")
		}
	}()
}
