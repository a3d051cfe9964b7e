package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glassroom/glassroom/egress"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessionstore"
)

// Store keeps the sessions a restarted gateway brings back
// (*sessionstore.Store implements it). Without one, nothing is kept.
type Store interface {
	Put(recs ...sessionstore.Record) error
	Delete(id string) error
	MarkLost(r sessionstore.Record, reason string) error
	Sessions() ([]sessionstore.Record, error)
}

// noStore is the Store of a gateway that keeps nothing.
type noStore struct{}

func (noStore) Put(...sessionstore.Record) error           { return nil }
func (noStore) Delete(string) error                        { return nil }
func (noStore) MarkLost(sessionstore.Record, string) error { return nil }
func (noStore) Sessions() ([]sessionstore.Record, error)   { return nil, nil }

// restoredSeqGap separates a restored session's event numbers from the
// ones it had before: events of the last seconds before a crash may have
// been numbered past the stored one.
const restoredSeqGap = 1 << 24

// storeRecord describes s for the store.
func (s *Session) storeRecord() sessionstore.Record {
	s.mu.Lock()
	r := sessionstore.Record{ID: s.id, Tenant: s.tenant, Runtime: s.runtime, CreatedAt: s.created,
		LastActive: s.lastActive, IdleTimeout: s.idle, Metadata: s.metadata, EndAt: s.endAt, JupyterSessions: slices.Clone(s.jupyterSessions)}
	if s.template != TemplateDefault {
		r.Template = s.template
	}
	if s.first.kernel != sandbox.DefaultKernel {
		r.Kernel = s.first.kernel
	}
	if id, _, ok := s.first.Running(); ok {
		r.Running = id
	}
	s.mu.Unlock()
	if n := networkOf(s.egress); n != nil {
		r.Network, r.NetworkDeny, r.NetworkClosed = n.Allow, n.Deny, len(n.Allow) == 0
	}
	r.Volumes = s.volumes
	r.PrivatePreviews = s.privatePreviews
	r.OnTimeout, r.AutoResume, r.Lifetime = s.lifecycle.OnTimeout, s.lifecycle.AutoResume, s.lifetime
	r.Hibernate = s.lifecycle.hibernates()
	r.PausedAtTimeout = s.pause.isHeld() && s.pause.atTimeout.Load()
	r.LastSeq = s.LastSeq()
	if p, ok := s.sandbox.(sandbox.Persistent); ok {
		r.Sandbox = p.State()
	} else {
		r.Sandbox = sandbox.State{ID: s.id, Limits: s.sandbox.Limits()}
	}
	return r
}

// RestoreResult counts what Restore did.
type RestoreResult struct {
	Adopted, Restarted, Lost int
	// Hibernated: hibernated sessions, which wake on their next use.
	Hibernated int
}

// Restore brings back the sessions of the store: on a runtime whose
// sandboxes outlive the gateway (sandbox.Adopter), each is adopted with
// its kernel and variables (or its kernel restarted, files kept, when it
// had stopped), its remaining lifetime and idle budget, its tenant; a
// session that cannot be brought back is marked lost in the store with
// the reason. Then the runtime removes whatever of its instance is left.
// Call it once, before serving.
func (m *Manager) Restore(ctx context.Context) (RestoreResult, error) {
	var res RestoreResult
	recs, err := m.cfg.Store.Sessions()
	if err != nil {
		m.log.Warn().Err(err).Msg("session store: some records unreadable")
	}
	adopter, canAdopt := m.rt.(sandbox.Adopter)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, rec := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			outcome, reason := m.restore(ctx, adopter, canAdopt, rec)
			mu.Lock()
			defer mu.Unlock()
			switch outcome {
			case "adopted":
				res.Adopted++
			case "restarted":
				res.Restarted++
			case "hibernated":
				res.Hibernated++
			default:
				res.Lost++
				m.log.Warn().Str("session", rec.ID).Str("reason", reason).Msg("session not restored")
				if err := m.cfg.Store.MarkLost(rec, reason); err != nil {
					m.log.Warn().Err(err).Msg("session store write failed")
				}
			}
			m.cfg.Observer.Restored(outcome)
		}()
	}
	wg.Wait()
	if finder, ok := m.rt.(sandbox.OrphanFinder); ok {
		o := m.adoptOrphans(ctx, finder)
		res.Adopted += o.Adopted
		res.Restarted += o.Restarted
		res.Lost += o.Lost
	}
	m.networks.egress.RemoveStale() // the proxies of sessions not restored
	if canAdopt {
		if err := adopter.Reconcile(ctx); err != nil {
			return res, fmt.Errorf("sessions: restore: %w", err)
		}
	}
	return res, nil
}

// restore brings back one session: "adopted" (variables kept),
// "restarted" (files kept, variables lost) or "lost" with the reason.
func (m *Manager) restore(ctx context.Context, adopter sandbox.Adopter, canAdopt bool, rec sessionstore.Record) (outcome, reason string) {
	now := time.Now()
	if rec.Hibernated != "" { // no sandbox to adopt: its snapshot is its state, on any runtime
		switch {
		case m.snaps == nil:
			return "lost", "it was hibernated, and this gateway keeps no snapshots"
		case !now.Before(rec.EndAt):
			if err := m.snaps.store.Delete(rec.Tenant, rec.Hibernated); err != nil {
				m.log.Warn().Err(err).Str("session", rec.ID).Msg("deleting an expired hibernated session's snapshot failed")
			}
			return "lost", "lifetime ended while the gateway was down"
		}
		m.hibernated.put(rec, nil)
		return "hibernated", ""
	}
	// A session whose lifecycle pauses it at its timeout is paused, not
	// lost, for a timeout that passed while the gateway was down (the
	// reaper does it); only the maximum lifetime ends it.
	pauses := restoredLifecycle(rec).OnTimeout == OnTimeoutPause
	switch {
	case !canAdopt || rec.Runtime != m.rt.Name():
		return "lost", "its kernel ended with the previous gateway (" + rec.Runtime + " sessions do not survive a restart)"
	case pauses && now.After(rec.CreatedAt.Add(m.cfg.MaxLifetime)):
		return "lost", "lifetime ended while the gateway was down"
	case pauses:
	case (rec.EndAt.IsZero() && now.After(rec.CreatedAt.Add(m.cfg.MaxLifetime))) || (!rec.EndAt.IsZero() && now.After(rec.EndAt)):
		return "lost", "lifetime ended while the gateway was down"
	case now.After(rec.LastActive.Add(rec.IdleTimeout)):
		return "lost", "idle timeout passed while the gateway was down"
	}
	sctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	sb, err := adopter.Adopt(sctx, rec.Sandbox)
	if err != nil {
		return "lost", "its sandbox could not be adopted: " + err.Error()
	}
	restarted := sb.(sandbox.Persistent).State().Incarnation != rec.Sandbox.Incarnation
	log := m.log.With().Str("session", rec.ID).Logger()
	conn, err := m.cfg.Dial(sctx, sb.Connection(), m.cfg.Kernel, log)
	if err != nil && !restarted {
		// The kernel does not answer with the stored key: start it afresh.
		if rerr := sb.Restart(sctx); rerr == nil {
			restarted = true
			conn, err = m.cfg.Dial(sctx, sb.Connection(), m.cfg.Kernel, log)
		}
	}
	if err != nil {
		_ = sb.Close(context.WithoutCancel(ctx))
		return "lost", "its kernel does not answer: " + err.Error()
	}
	files, watch, err := m.launch.openWorkspace(sctx, sb, log)
	if err != nil {
		_ = conn.Close()
		_ = sb.Close(context.WithoutCancel(ctx))
		return "lost", "its workspace could not be opened: " + err.Error()
	}
	jupyterSessions, err := restoredJupyterSessions(rec.JupyterSessions)
	if err != nil {
		log.Warn().Err(err).Msg("restored session: its stored Jupyter sessions are dropped")
	}
	var created atomic.Pointer[Session]
	proxy, netLost := m.networks.resume(rec, networkNotifier(&created))
	releaseVolumes := m.reacquireVolumes(ctx, rec, log) // their binds outlived the gateway with the workspace
	s := newSession(sessionParams{id: rec.ID, tenant: rec.Tenant, runtime: m.rt.Name(), cfg: m.cfg, log: m.log,
		idle: rec.IdleTimeout, created: rec.CreatedAt, lastActive: rec.LastActive, firstSeq: rec.LastSeq + restoredSeqGap,
		budget: m.budget.Account(rec.Tenant), slots: m.slots, sandbox: sb, client: conn, files: files, watch: watch, egress: proxy, persist: m.records.put, wake: m.clock.wake, networks: m.networks,
		kernel: rec.Kernel, installed: m.InstalledKernels(), template: rec.Template, metadata: copyMetadata(rec.Metadata), endAt: rec.EndAt,
		jupyterSessions: jupyterSessions, volumes: rec.Volumes, releaseVolumes: releaseVolumes, privatePreviews: rec.PrivatePreviews,
		lifecycle: restoredLifecycle(rec), lifetime: rec.Lifetime})
	created.Store(s)
	reason = "the gateway restarted; events before this one are gone"
	if restarted {
		reason = "the gateway restarted and the kernel had stopped: it was started again, variables lost, files kept"
	}
	if netLost != "" {
		reason += "; " + netLost
	}
	s.first.publish(Event{Type: EventKernel, State: string(StateIdle), Reason: reason})
	if rec.Running != "" {
		s.first.publish(Event{Type: EventDone, ID: rec.Running, Status: StatusUnknown, Reason: "the gateway restarted while this execution ran; it went on in the kernel, its status and output are lost",
			StateLost: ptr(restarted), Truncated: ptr(true)})
	}
	if rec.PausedAtTimeout && !restarted { // paused again, as it was, before anyone can use it (a restarted kernel has nothing to keep)
		if err := s.pause.holdAtTimeout(sctx, nil); err != nil {
			log.Warn().Err(err).Msg("restored session: pausing it again at its timeout failed; its timeout is now, for the reaper to try again")
			s.mu.Lock()
			s.endAt = now
			s.mu.Unlock()
		}
	}
	if !m.table.insert(s) { // shutting down while an orphan was adopted: let it go again
		if err := s.detach(context.WithoutCancel(ctx), restartingReason); err != nil {
			m.log.Warn().Err(err).Str("session", rec.ID).Msg("detach after adoption failed")
		}
		return "lost", "the gateway is shutting down"
	}
	m.watchFence(s)
	m.records.put(s)
	if restarted {
		return "restarted", ""
	}
	return "adopted", ""
}

// adoptOrphans adopts the sandboxes finder reports without a gateway: this
// gateway's own after a restart without a store, and those of a gateway
// that went away. Each becomes a session of the tenant it records, with
// the default idle timeout (its own is not known) and its remaining
// lifetime; one without a tenant is left (no one could be served it, and
// the runtime removes it in time).
func (m *Manager) adoptOrphans(ctx context.Context, finder sandbox.OrphanFinder) RestoreResult {
	var res RestoreResult
	orphans, err := finder.Orphans(ctx)
	if err != nil {
		m.log.Warn().Err(err).Msg("listing orphaned sandboxes failed")
		return res
	}
	for _, o := range orphans {
		if m.table.isClosed() || ctx.Err() != nil {
			return res
		}
		switch m.adoptOrphan(ctx, o) {
		case "adopted":
			res.Adopted++
		case "restarted":
			res.Restarted++
		case "lost":
			res.Lost++
		}
	}
	return res
}

// adoptOrphan adopts one orphaned sandbox as a session of the tenant it
// records (see adoptOrphans): "adopted", "restarted" (its kernel was not
// running: started afresh), "lost" (it could not be: it may be another
// gateway's by now, or adoptable next time, so it is not recorded), or
// "" when it is skipped (served here already, no tenant, a bad id). One
// adoption per session at a time: a second caller waits for the first's.
func (m *Manager) adoptOrphan(ctx context.Context, o sandbox.Orphan) string {
	id := o.State.ID
	if o.Tenant == "" || !sandbox.IDPattern.MatchString(id) {
		return ""
	}
	release, err := m.adoptions.claim(ctx, id)
	if err != nil {
		return ""
	}
	defer release()
	if m.table.get(id) != nil {
		return ""
	}
	now := time.Now()
	created := o.Created
	if created.IsZero() || created.After(now) {
		created = now
	}
	adopter, canAdopt := m.rt.(sandbox.Adopter)
	// Whether its previews were private is not known from the sandbox:
	// they are, so that a failover never opens a private session's
	// previews (a public one's tagged host then needs its traffic token,
	// which its owner's GET gives).
	rec := sessionstore.Record{ID: id, Tenant: o.Tenant, Runtime: m.rt.Name(), CreatedAt: created,
		LastActive: now, IdleTimeout: m.cfg.IdleTimeout, Sandbox: o.State, PrivatePreviews: true}
	outcome, reason := m.restore(ctx, adopter, canAdopt, rec)
	if outcome == "lost" {
		m.log.Warn().Str("session", id).Str("reason", reason).Msg("orphaned session not adopted")
		return outcome
	}
	m.cfg.Observer.Restored(outcome)
	m.log.Info().Str("session", id).Str("outcome", outcome).Msg("adopted an orphaned session")
	return outcome
}

// Detach stops serving every session without stopping its kernel, for an
// upgrade: sandboxes that outlive the gateway (sandbox.Persistent) are let
// go, their records flushed, and the next gateway adopts them; the others
// are closed (and forgotten). A sandbox that ends itself once no gateway
// holds it (sandbox.Expiring) is told its session's end first: its
// lifetime's or its idle expiry's, whichever comes first, after which no
// gateway would restore it. It refuses new sessions and returns when
// every session is detached or closed, or ctx ends.
func (m *Manager) Detach(ctx context.Context) error {
	m.pool.close(ctx)
	m.records.putAll(m.table.snapshot())
	all := m.table.takeAll()
	m.retryLeft(ctx) // the sandboxes earlier closes left: once more
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if _, ok := s.sandbox.(sandbox.Persistent); ok {
				err = s.detach(ctx, restartingReason)
			} else {
				err = m.end(ctx, s, "gateway shutting down")
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	m.closing.Wait()
	m.pausing.Wait()
	m.fences.Wait()
	return errors.Join(append(errs, m.launch.notify.Close())...)
}

// resumeNetwork starts a restored session's egress proxy again, in the
// directory its sandbox binds. When that cannot be done (the operator's
// ceiling no longer admits the list, the directory is gone) the session
// comes back without a network, and lost says why.
func (m *networks) resume(rec sessionstore.Record, notify func(egress.Decision)) (proxy *egress.Proxy, lost string) {
	if len(rec.Network) == 0 && !rec.NetworkClosed {
		return nil, ""
	}
	var pol egress.Policy // closed: the zero policy, refusing everything
	var err error
	if len(rec.Network) > 0 {
		pol, err = m.egress.Admit(rec.Network)
		if err == nil {
			pol, err = pol.WithDeny(rec.NetworkDeny)
		}
	}
	if err == nil {
		proxy, err = m.egress.Resume(rec.ID, pol, notify)
	}
	if err != nil {
		m.log.Warn().Err(err).Str("session", rec.ID).Msg("restored session: network not resumed")
		var pe *egress.PatternError
		if errors.As(err, &pe) {
			return nil, "its network is gone (" + pe.Public() + ")"
		}
		return nil, "its network is gone (the egress proxy could not be resumed)"
	}
	return proxy, ""
}

// restartingReason is what clients of a session detached for the next
// gateway are told.
const restartingReason = "gateway restarting"

// detach stops the session's goroutines and lets its sandbox go,
// running, telling clients reason.
func (s *Session) detach(ctx context.Context, reason string) error {
	s.mu.Lock()
	if s.closeReason == "" {
		s.closeReason = reason
	}
	s.mu.Unlock()
	s.first.noteClose(reason) // before its context ends with the session's
	// The commands and other contexts do not outlive this gateway: the
	// next one adopts the sandbox and its first kernel only.
	s.cmds.close()
	s.ctxs.closeAll(ctx, reason)
	s.cancel()
	// No gateway restores the session past its lifetime or its idle
	// expiry (restore): a sandbox that ends itself ends by then.
	s.mu.Lock()
	end := s.endAt
	if idle := s.lastActive.Add(s.idle); idle.Before(end) {
		end = idle
	}
	s.mu.Unlock()
	s.tellEnd(end) // one whose lifecycle pauses it: its maximum lifetime
	err := s.sandbox.(sandbox.Persistent).Detach(ctx)
	if s.egress != nil { // its directory stays, for the next gateway to resume
		if derr := s.egress.Detach(); derr != nil {
			s.log.Warn().Err(derr).Msg("egress proxy detach failed")
		}
	}
	s.first.detach(reason)
	s.side.close()
	_ = s.files.Close()
	s.first.publish(Event{Type: EventKernel, State: string(StateRestarting), Reason: reason})
	s.hub.close()
	s.budget.Close()
	return err
}

// restoredLifecycle is a record's lifecycle, as the session asked for it
// (one the store holds that is not valid ends the session at its
// timeout, as before lifecycles were kept).
func restoredLifecycle(rec sessionstore.Record) Lifecycle {
	l := Lifecycle{OnTimeout: rec.OnTimeout, AutoResume: rec.AutoResume}
	if rec.Hibernate {
		l.KeepMemory = new(bool)
	}
	if l.validate() != nil {
		return Lifecycle{}
	}
	return l
}
