package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/cleanup"
	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessionstore"
	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
)

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
	// Volumes are the tenant's volumes to mount: name → a directory of the
	// workspace (absolute under it, or relative to it), made if missing.
	// Such a session starts cold; ErrNoVolumes without Config.Volumes.
	Volumes map[string]string
	// PrivatePreviews: the session's preview host carries no grant of its
	// own; a preview needs a link's token or the session's traffic
	// access token (E2B's allow_public_traffic=False). The gateway acts
	// on it (Info.PrivatePreviews).
	PrivatePreviews bool
	// Lifecycle says what the session does at its timeout: end (the
	// default) or pause (Lifecycle).
	Lifecycle Lifecycle

	// woken, set by a wake from hibernation (hibernate.go), gives the
	// session its old id, creation time and lifetime's end.
	woken *sessionstore.Record
}

// Create returns a new session of tenant once its kernel answers. A
// session asking for nothing special (no env, default limits, no network) takes a
// pre-started kernel from the warm pool, in about a millisecond; any other
// starts cold, waiting for its turn among MaxConcurrentStarts (about half a
// second for the start itself). The session's id is its sandbox's.
func (m *Manager) Create(ctx context.Context, tenant string, opts CreateOptions) (*Session, error) {
	opts, err := m.templates.apply(opts)
	if err != nil {
		return nil, err
	}
	if err := CheckMetadata(opts.Metadata); err != nil {
		return nil, err
	}
	if err := opts.Lifecycle.validate(); err != nil {
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
	var createdAt, endAt time.Time
	if w := opts.woken; w != nil {
		spec.ID, createdAt, endAt = w.ID, w.CreatedAt, w.EndAt
	}
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
	policy, err := m.networks.admit(opts.Network)
	if err != nil {
		return nil, err
	}
	if err := m.table.reserve(tenant, m.cfg.MaxSessions, m.cfg.MaxSessionsPerTenant); err != nil {
		return nil, err
	}
	defer m.table.unreserve(tenant)
	mounts, volumes, releaseVolumes, err := m.acquireVolumes(ctx, tenant, opts.Volumes)
	if err != nil {
		return nil, err
	}
	kept := false
	defer func() {
		if !kept {
			releaseVolumes()
		}
	}()
	if spec.Volumes = mounts; len(mounts) > 0 {
		if err := spec.Validate(); err != nil {
			var se *sandbox.SpecError
			if errors.As(err, &se) {
				return nil, &InvalidError{Reason: se.Public(), Err: err}
			}
			return nil, err
		}
	}

	start := time.Now()
	// A session with a network gets its proxy first (the sandbox binds its
	// socket), and so never a pooled kernel: those have the zero spec.
	var proxy *egress.Proxy
	var created atomic.Pointer[Session] // tells the proxy's refusals to the session once it exists
	if !policy.Empty() {
		if proxy, err = m.networks.egress.Start(spec.ID, policy, networkNotifier(&created)); err != nil {
			return nil, fmt.Errorf("sessions: create: %w: %w", sandbox.ErrUnavailable, err)
		}
		spec.EgressSocket = proxy.Socket()
	}
	var k *readyKernel
	pooled := false
	if opts.woken == nil { // a pooled sandbox has an id of its own
		k, pooled = m.pool.take(spec)
	}
	if !pooled {
		if k, err = m.launch.startKernel(ctx, tenant, spec); err != nil {
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
	if endAt.IsZero() { // from the session's creation, once its kernel answers
		endAt = lifetimeEnd(opts.Lifetime)
	}
	s := newSession(sessionParams{id: id, tenant: tenant, runtime: m.rt.Name(), cfg: m.cfg, log: m.log,
		idle: idle, budget: m.budget.Account(tenant), slots: m.slots, sandbox: k.sb, client: k.conn, files: k.files, watch: k.watch, egress: proxy, persist: m.records.put, wake: m.clock.wake, networks: m.networks,
		kernel: kernelName, installed: m.InstalledKernels(), template: opts.Template, metadata: copyMetadata(opts.Metadata),
		created: createdAt, lastActive: nowIfSet(createdAt), env: opts.Env,
		endAt: endAt, volumes: volumes, releaseVolumes: releaseVolumes, privatePreviews: opts.PrivatePreviews,
		lifecycle: opts.Lifecycle, lifetime: opts.Lifetime})
	kept = true // the session gives them back at its close
	created.Store(s)
	if !m.table.insert(s) {
		_ = s.close(context.WithoutCancel(ctx), "gateway shutting down")
		return nil, ErrClosed
	}
	m.watchFence(s)
	m.records.put(s)
	m.clock.wake() // its deadlines count from now
	m.cfg.Observer.SessionCreated(pooled)
	m.log.Info().Str("session", id).Str("tenant", tenant).Bool("pooled", pooled).Dur("start", time.Since(start)).Msg("session created")
	return s, nil
}

// nowIfSet is now when t is set, else zero (a new session's activity
// starts with its creation).
func nowIfSet(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.Now()
}

// launcher starts a sandbox for a spec with its kernel connected and its
// workspace opened: the first steps of every session, pooled or not, and
// of a restored session's workspace. It holds only its dependencies and
// is safe for concurrent use; a start blocks for a start slot
// (Config.MaxConcurrentStarts, shared fairly by tenants) and the
// runtime.
type launcher struct {
	cfg    Config
	rt     Runtime
	log    zerolog.Logger
	starts *fairSlots
	notify *workspace.Inotify // shared by every session's change tracking
}

// startKernel starts a sandbox for spec, dials its kernel and opens its
// workspace, for tenant ("" for the warm pool). At most
// Config.MaxConcurrentStarts run at once; the others wait their turn
// (bounded by ctx), shared fairly between tenants (fairSlots): a tenant
// creating many sessions at once makes another's wait for the next start
// to end, not behind all of its own. A failure or a panic at any step
// undoes every step before it: the sandbox is closed, its slot, uid and
// cgroup freed.
func (m *launcher) startKernel(ctx context.Context, tenant string, spec sandbox.Spec) (_ *readyKernel, err error) {
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
func (m *launcher) openWorkspace(ctx context.Context, sb sandbox.Sandbox, log zerolog.Logger) (workspace.FS, workspace.Tracker, error) {
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
