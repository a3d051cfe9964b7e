package sessions

import (
	"sync"

	"github.com/glassroom/glassroom/sessionstore"
	"github.com/rs/zerolog"
)

// records writes the sessions' records to the store (Config.Store): one
// at its creation and at each kernel restart (put), all of them every
// Config.FlushInterval (putAll: last activity, event numbers and the
// running execution change all the time; a crash loses at most one
// interval of them), and its removal when it ends (forget). A failed
// write is logged: the session goes on. Safe for concurrent use.
type records struct {
	store   Store
	log     zerolog.Logger
	flushed func() // Config.Observer.StoreFlushed

	// mu orders a flush with a hibernation's record (putRecord): a
	// flush's records of sessions still open are written before it, or
	// the closed session is left out.
	mu sync.Mutex
}

// put writes s's record now.
func (r *records) put(s *Session) {
	if err := r.store.Put(s.storeRecord()); err != nil {
		r.log.Warn().Err(err).Str("session", s.id).Msg("session store write failed")
	}
}

// putAll writes the records of all, in one transaction.
func (r *records) putAll(all []*Session) {
	if len(all) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := make([]sessionstore.Record, 0, len(all))
	for _, s := range all {
		if s.ctx.Err() == nil && !s.hibernating.Load() { // a closed or hibernated session's record is not the flush's
			recs = append(recs, s.storeRecord())
		}
	}
	if err := r.store.Put(recs...); err != nil {
		r.log.Warn().Err(err).Msg("session store flush failed")
		return
	}
	r.flushed()
}

// putRecord writes rec, the record of a session that has closed (a
// hibernated one), after any flush under way.
func (r *records) putRecord(rec sessionstore.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.store.Put(rec); err != nil {
		r.log.Warn().Err(err).Str("session", rec.ID).Msg("session store write failed: the hibernated session will not survive a restart")
	}
}

// forget removes a deleted or expired session from the store.
func (r *records) forget(id string) {
	if err := r.store.Delete(id); err != nil {
		r.log.Warn().Err(err).Str("session", id).Msg("session store write failed")
	}
}
