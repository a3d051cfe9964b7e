package sessions

// Hibernation: a session whose lifecycle says so (keep_memory false), or
// whose client asks (E2B's pause(keep_memory=False)), is snapshotted and
// its sandbox freed; it keeps its id, is listed as "hibernated" and
// survives a gateway's restart in the store. Its next use wakes it (Wake:
// a new sandbox with the same id, the snapshot restored), or, without
// auto_resume, uses fail with ErrHibernated until a resume wakes it. Its
// lifetime still ends it.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessionstore"
)

// ErrHibernated is the error of a hibernated session (HibernatedError).
var ErrHibernated = errors.New("sessions: session hibernated")

// errUsedMeanwhile: the session was used while it was being hibernated:
// it goes on instead.
var errUsedMeanwhile = errors.New("sessions: hibernate: the session was used meanwhile; it goes on")

// HibernatedError is Manager.Get's answer for a hibernated session: its
// description, and whether its next use wakes it (Wake) or it waits for
// a resume.
type HibernatedError struct {
	Info       Info
	AutoResume bool
}

func (e *HibernatedError) Error() string { return ErrHibernated.Error() }
func (e *HibernatedError) Unwrap() error { return ErrHibernated }

// hibernated are the manager's hibernated sessions, by id: each its
// store record (Record.Hibernated names its snapshot). Safe for
// concurrent use.
type hibernated struct {
	mu   sync.Mutex
	byID map[string]*hibernation
}

type hibernation struct {
	rec    sessionstore.Record
	waking chan struct{} // closed when the wake under way ends; nil: none
	// settled is closed once the session's old sandbox is gone: a wake
	// starts its new one (of the same id) only then.
	settled chan struct{}
}

func newHibernated() *hibernated { return &hibernated{byID: map[string]*hibernation{}} }

// put adds a hibernated session; settled is closed once its sandbox is
// gone (nil: it is).
func (h *hibernated) put(rec sessionstore.Record, settled chan struct{}) {
	if settled == nil {
		settled = make(chan struct{})
		close(settled)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byID[rec.ID] = &hibernation{rec: rec, settled: settled}
}

// get returns tenant's hibernated session id.
func (h *hibernated) get(tenant, id string) (sessionstore.Record, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.byID[id]
	if !ok || e.rec.Tenant != tenant {
		return sessionstore.Record{}, false
	}
	return e.rec, true
}

// list returns tenant's hibernated sessions.
func (h *hibernated) list(tenant string) []sessionstore.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []sessionstore.Record
	for _, e := range h.byID {
		if e.rec.Tenant == tenant {
			out = append(out, e.rec)
		}
	}
	return out
}

// take removes tenant's hibernated session id ("" tenant: anyone's),
// unless a wake of it is under way (busy).
func (h *hibernated) take(tenant, id string) (rec sessionstore.Record, ok, busy bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, found := h.byID[id]
	switch {
	case !found || tenant != "" && e.rec.Tenant != tenant:
		return sessionstore.Record{}, false, false
	case e.waking != nil:
		return sessionstore.Record{}, false, true
	}
	delete(h.byID, id)
	return e.rec, true, false
}

// due takes out the hibernated sessions whose lifetime has ended by now
// (those being woken are left to their wake).
func (h *hibernated) due(now time.Time) []sessionstore.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []sessionstore.Record
	for id, e := range h.byID {
		if e.waking == nil && !now.Before(e.rec.EndAt) {
			out = append(out, e.rec)
			delete(h.byID, id)
		}
	}
	return out
}

// until is wait, or less: until the first lifetime's end (plus
// reapSlack).
func (h *hibernated) until(now time.Time, wait time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.byID {
		if in := e.rec.EndAt.Sub(now) + reapSlack; e.rec.EndAt.After(now) && in < wait {
			wait = in
		}
	}
	return wait
}

// claim starts the wake of tenant's hibernated session id: mine when
// this caller wakes it (it must call release), else wait is closed when
// another's wake ends. ok is false when there is no such session.
func (h *hibernated) claim(tenant, id string) (rec sessionstore.Record, wait <-chan struct{}, mine, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, found := h.byID[id]
	if !found || e.rec.Tenant != tenant {
		return sessionstore.Record{}, nil, false, false
	}
	if e.waking != nil {
		return e.rec, e.waking, false, true
	}
	select {
	case <-e.settled:
	default:
		return e.rec, e.settled, false, true
	}
	e.waking = make(chan struct{})
	return e.rec, nil, true, true
}

// release ends a claimed wake: the session is forgotten when it woke.
func (h *hibernated) release(id string, woke bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.byID[id]
	if !ok || e.waking == nil {
		return
	}
	close(e.waking)
	e.waking = nil
	if woke {
		delete(h.byID, id)
	}
}

// hibernatedInfo describes a hibernated session: paused, as E2B lists
// one, with its state "hibernated".
func hibernatedInfo(rec sessionstore.Record) Info {
	in := Info{ID: rec.ID, State: StateHibernated, Runtime: rec.Runtime, CreatedAt: rec.CreatedAt, ExpiresAt: rec.EndAt,
		IdleTimeoutS: int(rec.IdleTimeout / time.Second), Limits: rec.Sandbox.Limits, Paused: true, Language: rec.Kernel,
		Template: rec.Template, Metadata: copyMetadata(rec.Metadata), EndAt: rec.EndAt, PausedByClient: true,
		Volumes: rec.Volumes, PrivatePreviews: rec.PrivatePreviews, Hibernated: true, PausedAtTimeout: rec.PausedAtTimeout}
	if in.Language == "" {
		in.Language = sandbox.DefaultKernel
	}
	if in.Template == "" {
		in.Template = TemplateDefault
	}
	if in.Metadata == nil {
		in.Metadata = map[string]string{}
	}
	if len(rec.Network) > 0 || rec.NetworkClosed {
		in.Network = &Network{Allow: rec.Network, Deny: rec.NetworkDeny}
	}
	if l := restoredLifecycle(rec); l.OnTimeout == OnTimeoutPause {
		in.Lifecycle = &l
	}
	return in
}

// hibernatedSessions returns the infos of tenant's hibernated sessions,
// oldest first.
func hibernatedSessions(m *Manager, tenant string) []Info {
	recs := m.hibernated.list(tenant)
	out := make([]Info, 0, len(recs))
	for _, rec := range recs {
		out = append(out, hibernatedInfo(rec))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

// forgetHibernated removes a hibernated session taken out of m.hibernated:
// its record and its snapshot.
func forgetHibernated(m *Manager, rec sessionstore.Record, reason string) {
	m.records.forget(rec.ID)
	if m.snaps != nil {
		if err := m.snaps.store.Delete(rec.Tenant, rec.Hibernated); err != nil {
			m.log.Warn().Err(err).Str("session", rec.ID).Msg("deleting a hibernated session's snapshot failed")
		}
	}
	m.log.Info().Str("session", rec.ID).Str("reason", reason).Msg("hibernated session ended")
}

// Hibernate snapshots s and frees its sandbox; s keeps its id, and Wake
// brings it back. It waits for what s's kernels run (the capture takes
// its turn), then holds s paused while it is let go. A session used
// between its capture and its hold goes on (an error says so), as does
// one whose capture fails (ErrNoSnapshots without a store, a snapshot
// too large). reason is logged and told on its stream.
func Hibernate(ctx context.Context, m *Manager, s *Session, reason string) error {
	return hibernate(ctx, m, s, reason, false)
}

// hibernate is Hibernate; atTimeout: at the session's timeout (its
// lifecycle), when its lifetime then runs to the gateway's maximum, and
// starts again when it wakes (as after a pause at the timeout).
func hibernate(ctx context.Context, m *Manager, s *Session, reason string, atTimeout bool) error {
	if m.snaps == nil {
		return ErrNoSnapshots
	}
	if s.pause.isHeld() { // a paused sandbox runs no capture: thaw it first
		if err := s.Resume(ctx); err != nil {
			return fmt.Errorf("sessions: hibernate: %w", err)
		}
	}
	in, err := m.snaps.capture(ctx, s.tenant, s, snapshotForHibernation, "")
	if err != nil {
		return fmt.Errorf("sessions: hibernate: %w", err)
	}
	drop := func() {
		if err := m.snaps.store.Delete(s.tenant, in.ID); err != nil {
			m.log.Warn().Err(err).Str("session", s.id).Msg("deleting an unused hibernation snapshot failed")
		}
	}
	since := s.LastActivity()
	if err := s.pause.hold(ctx); err != nil && !errors.Is(err, ErrNoPause) { // new work is refused from here
		drop()
		return fmt.Errorf("sessions: hibernate: %w", err)
	}
	if s.LastActivity().After(since) || s.ctxs.busy() || s.cmds.busy() {
		_ = s.Resume(ctx)
		drop()
		return errUsedMeanwhile
	}
	rec := s.storeRecord()
	rec.Hibernated, rec.Env, rec.PausedAtTimeout, rec.Running = in.ID, s.env, atTimeout, ""
	if atTimeout {
		rec.EndAt = s.created.Add(m.cfg.MaxLifetime)
	}
	// The record first: from here a crash or a kill leaves a hibernated
	// session, which the next gateway wakes from its snapshot.
	s.hibernating.Store(true)
	m.records.putRecord(rec)
	settled := make(chan struct{})
	defer close(settled)
	m.hibernated.put(rec, settled) // before the session leaves the table: a lookup finds one or the other
	s.first.publish(Event{Type: EventKernel, State: string(StateHibernated),
		Reason: "hibernated (" + reason + "): its sandbox is freed, its variables and files are in a snapshot; its next use wakes it"})
	if _, err := m.table.take("", s.id); err != nil { // deleted meanwhile
		m.hibernated.take("", s.id)
		m.records.forget(s.id)
		drop()
		return err
	}
	defer m.closing.Done()
	if err := m.end(context.WithoutCancel(ctx), s, "hibernated"); err != nil {
		m.log.Warn().Err(err).Str("session", s.id).Msg("a hibernated session's sandbox was not closed cleanly")
	}
	m.clock.wake()
	m.log.Info().Str("session", s.id).Str("snapshot", in.ID).Int64("bytes", in.SizeBytes).Str("reason", reason).Msg("session hibernated")
	return nil
}

// Wake brings tenant's hibernated session id back: a new sandbox under
// its id, as it was created (language, template, limits, network, env,
// lifecycle, metadata, volumes; its creation time and lifetime's end),
// with its snapshot restored; its stream says so. A live session is
// returned as it is; one woken by another call meanwhile is waited for.
// ErrNotFound: no such session.
func Wake(ctx context.Context, m *Manager, tenant, id string) (*Session, error) {
	var rec sessionstore.Record
	for {
		if s := m.table.get(id); s != nil && s.tenant == tenant {
			return s, nil
		}
		r, wait, mine, ok := m.hibernated.claim(tenant, id)
		if !ok {
			return nil, ErrNotFound
		}
		if mine {
			rec = r
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("sessions: wake: %w", ctx.Err())
		}
	}
	woke := false
	defer func() { m.hibernated.release(id, woke) }()
	start := time.Now()
	if rec.PausedAtTimeout { // its lifetime starts again, as after a pause at the timeout
		rec.EndAt = resumedEnd(rec.CreatedAt, rec.Lifetime, m.cfg.MaxLifetime, time.Now())
	}
	opts := CreateOptions{Kernel: rec.Kernel, Env: rec.Env, IdleTimeout: rec.IdleTimeout, Limits: rec.Sandbox.Limits,
		Template: rec.Template, Metadata: copyMetadata(rec.Metadata), Lifetime: rec.Lifetime, Volumes: rec.Volumes,
		PrivatePreviews: rec.PrivatePreviews, Lifecycle: restoredLifecycle(rec), woken: &rec}
	if len(rec.Network) > 0 {
		opts.Network = Network{Allow: rec.Network, Deny: rec.NetworkDeny}
	}
	s, err := wakeCreate(ctx, m, tenant, opts)
	if err != nil {
		return nil, fmt.Errorf("sessions: wake: %w", err)
	}
	woke = true
	rep, err := m.snaps.Restore(ctx, tenant, s, rec.Hibernated)
	if err != nil {
		s.first.publish(Event{Type: EventKernel, State: string(s.first.State()), Reason: "woken from hibernation, but its snapshot could not be restored (" + err.Error() + "): it starts empty"})
	} else {
		s.first.publish(Event{Type: EventKernel, State: string(s.first.State()), Reason: "woken from hibernation: " + restoreSummary(rep)})
		if err := m.snaps.store.Delete(tenant, rec.Hibernated); err != nil {
			m.log.Warn().Err(err).Str("session", id).Msg("deleting a woken session's snapshot failed")
		}
	}
	m.log.Info().Str("session", id).Dur("wake", time.Since(start)).Msg("session woken from hibernation")
	return s, nil
}

// wakeCreate creates the woken session. Its sandbox has the old one's
// id, which a runtime may still be deleting (a Kubernetes pod
// terminates after its close returned): while the runtime says so, the
// creation is tried again, up to wakeRetry.
func wakeCreate(ctx context.Context, m *Manager, tenant string, opts CreateOptions) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, wakeRetry)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		s, err := m.Create(ctx, tenant, opts)
		var se *sandbox.SpecError
		still := errors.Is(err, sandbox.ErrUnavailable) || errors.As(err, &se) && strings.Contains(se.Reason, "already has a sandbox")
		if err == nil || !still {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// wakeRetry bounds how long a wake waits for the old sandbox to be gone.
const wakeRetry = time.Minute

// restoreSummary says in a sentence what a restore brought back.
func restoreSummary(rep *RestoreReport) string {
	if rep.Error != "" {
		return rep.Error
	}
	var parts []string
	for _, c := range rep.Contexts {
		if c.Error != "" {
			parts = append(parts, c.Language+": "+c.Error)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %d names restored", c.Language, len(c.Restored)))
	}
	return "files restored; " + strings.Join(parts, "; ")
}
