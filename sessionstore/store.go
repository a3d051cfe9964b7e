package sessionstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// RecordVersion is the latest version of the records this package
// writes and reads. A record of a later version (a newer gateway's,
// before a downgrade) is not read; one without a version is of version
// 1. Version 2 is a record with a network deny list, a closed network or
// volumes: a gateway that knew none of them would resume its network
// without the deny list (or with no proxy), or let its volumes be
// deleted under it, so it must not read it.
const RecordVersion = 2

// Record is one session as the store keeps it.
type Record struct {
	// Version is set by Put (RecordVersion).
	Version     int           `json:"version,omitempty"`
	ID          string        `json:"id"`
	Tenant      string        `json:"tenant"`
	Runtime     string        `json:"runtime"`
	CreatedAt   time.Time     `json:"created_at"`
	LastActive  time.Time     `json:"last_active"`
	IdleTimeout time.Duration `json:"idle_timeout"`
	// LastSeq is the newest event sequence number known when the record
	// was written; a restored session numbers its events after it.
	LastSeq int64 `json:"last_seq"`
	// Running is the execution that was running when the record was
	// written ("" when none): after a crash it ended without a gateway.
	Running string `json:"running,omitempty"`
	// Network is the session's egress allowlist (canonical patterns), nil
	// for none: a restored session's proxy is resumed with it.
	Network []string `json:"network,omitempty"`
	// NetworkDeny is its deny list (canonical patterns), nil for none.
	NetworkDeny []string `json:"network_deny,omitempty"`
	// NetworkClosed says the session has a proxy whose allowlist is empty
	// (its network was changed to refuse everything): it is resumed so,
	// ready for a later change, rather than as a session without one.
	NetworkClosed bool `json:"network_closed,omitempty"`
	// Volumes are the tenant's volumes the session mounts: name → path.
	Volumes map[string]string `json:"volumes,omitempty"`
	// Kernel is the session's first kernel ("" for sandbox.DefaultKernel);
	// its other contexts are not kept (they do not outlive a gateway).
	Kernel  string        `json:"kernel,omitempty"`
	Sandbox sandbox.State `json:"sandbox"`
	// Template is the template the session was created from ("" for
	// "default"); Metadata, the client's; EndAt, when its lifetime ends
	// (zero: created_at + the gateway's maximum lifetime, as records
	// written before it was kept).
	Template string            `json:"template,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	EndAt    time.Time         `json:"end_at,omitempty"`
	// JupyterSessions are the Jupyter Server sessions (/api/sessions)
	// whose kernel is this session's first kernel, in creation order.
	// Records written before they were kept have none.
	JupyterSessions []JupyterSession `json:"jupyter_sessions,omitempty"`
	// PrivatePreviews: the session's previews need a token (records
	// written before it was kept have public ones).
	PrivatePreviews bool `json:"private_previews,omitempty"`
	// OnTimeout and AutoResume are the session's lifecycle ("" ends it at
	// its timeout); Lifetime, the lifetime it asked for (0: none), which a
	// resume after a pause at its timeout starts again.
	OnTimeout  string        `json:"on_timeout,omitempty"`
	AutoResume bool          `json:"auto_resume,omitempty"`
	Lifetime   time.Duration `json:"lifetime,omitempty"`
	// PausedAtTimeout: the session was paused at its timeout (its
	// lifecycle's pause) when the record was written; a gateway that
	// restores it pauses it again.
	PausedAtTimeout bool `json:"paused_at_timeout,omitempty"`
	// Hibernate: its lifecycle hibernates it at its timeout (E2B's
	// keep_memory=False) rather than freezing it.
	Hibernate bool `json:"hibernate,omitempty"`
	// Hibernated is, for a hibernated session (its sandbox gone), the
	// snapshot it wakes from; Env its environment then, which the woken
	// session gets again (only hibernated records hold it).
	Hibernated string            `json:"hibernated,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
}

// JupyterSession is a Jupyter Server session as the store keeps it: its
// id and the path, name and type a Jupyter client gave it. Its kernel is
// the session whose record holds it.
type JupyterSession struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
	Type string `json:"type"`
}

// Lost is a session that could not be brought back, and why.
type Lost struct {
	ID     string    `json:"id"`
	Tenant string    `json:"tenant"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// maxReasonBytes bounds a Lost reason.
const maxReasonBytes = 1024

var (
	bucketSessions = []byte("sessions")
	bucketLost     = []byte("lost")
)

var (
	// ErrCorrupt is the error of a transaction on a file found corrupt
	// while the store is open (bbolt panicked or faulted).
	ErrCorrupt = errors.New("sessionstore: the store file is corrupt")
	// ErrLocked is returned by Open when another process holds the file
	// (another gateway on the same state directory).
	ErrLocked = errors.New("sessionstore: the store file is in use by another process")
)

// RecordError is a stored record that cannot be read: it is skipped.
type RecordError struct {
	Key    string // the record's key, printable and bounded
	Reason string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("sessionstore: record %q unreadable: %s", e.Key, e.Reason)
}

// Store is the session store. Its methods are safe for concurrent use;
// each write is one transaction, committed (fsync) before it returns.
type Store struct {
	cfg Config
	log zerolog.Logger
	db  *bolt.DB
}

// FileName is the store's file in the state directory.
const FileName = "sessions.db"

// Open opens the store in cfg.Dir, creating it (mode 0600). An existing
// file is checked first (see the package documentation): a corrupt one
// is moved aside, logged, and replaced by an empty store; records that
// cannot be read are moved to the lost list; the lost list is pruned.
// It fails, leaving the file as it is, when the file cannot be checked
// or opened (ErrLocked: another process holds it). The caller must
// Close the store.
func Open(cfg Config, log zerolog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: log.With().Str("component", "sessionstore").Logger()}
	if err := os.MkdirAll(cfg.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("sessionstore: %w", err)
	}
	path := filepath.Join(cfg.Dir, FileName)
	why, err := s.inspect(path)
	if err != nil {
		return nil, err
	}
	if why != "" {
		aside, err := s.moveAside(path)
		if err != nil {
			return nil, fmt.Errorf("sessionstore: %s is corrupt (%s) and could not be moved aside: %w", path, why, err)
		}
		s.log.Error().Str("file", path).Str("moved_to", aside).Str("reason", why).
			Msg("session store corrupt: moved aside, starting with an empty store (sessions of the previous gateway are not restored)")
	}
	if err := s.open(path); err != nil {
		return nil, err
	}
	if err := s.tidy(); err != nil {
		_ = s.db.Close()
		return nil, err
	}
	return s, nil
}

// inspect returns why the file at path is corrupt, or "" when it is
// sound or absent.
func (s *Store) inspect(path string) (string, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("sessionstore: %w", err)
	case !st.Mode().IsRegular():
		return "not a regular file (" + st.Mode().Type().String() + ")", nil
	case st.Size() == 0:
		return "", nil // bbolt initializes an empty file
	}
	v, err := s.check(path)
	if err != nil {
		return "", err
	}
	return v.corrupt, nil
}

// moveAside renames the file at path to path.corrupt-<UTC time> and
// removes the older copies past KeepCorrupt. It returns the new name.
func (s *Store) moveAside(path string) (string, error) {
	base := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i > 100 {
			return "", errors.New("too many copies of this second")
		}
		aside = base + "-" + strconv.Itoa(i)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	old, err := filepath.Glob(filepath.Join(filepath.Dir(path), FileName+".corrupt-*"))
	if err == nil && len(old) > s.cfg.KeepCorrupt {
		sort.Strings(old) // by time: the names sort as their times
		for _, p := range old[:len(old)-s.cfg.KeepCorrupt] {
			if p != aside {
				_ = os.RemoveAll(p)
			}
		}
	}
	return aside, nil
}

// open opens the checked file read-write.
func (s *Store) open(path string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sessionstore: open %s: %w: %v", path, ErrCorrupt, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("%w (%s)", ErrLocked, path)
	}
	if err != nil {
		return fmt.Errorf("sessionstore: open %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil { // an older file may be wider
		_ = db.Close()
		return fmt.Errorf("sessionstore: %w", err)
	}
	s.db = db
	return nil
}

// tidy creates the buckets, moves the records that cannot be read to the
// lost list and prunes it.
func (s *Store) tidy() error {
	var moved []*RecordError
	err := s.update("open", func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSessions, bucketLost} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		sessions, lost := tx.Bucket(bucketSessions), tx.Bucket(bucketLost)
		type bad struct {
			key    []byte
			bucket bool // a nested bucket, not a value
			err    *RecordError
		}
		var bads []bad
		err := sessions.ForEach(func(k, v []byte) error {
			if _, err := s.decode(k, v); err != nil {
				bads = append(bads, bad{append([]byte(nil), k...), v == nil, err})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, b := range bads {
			del := sessions.Delete
			if b.bucket {
				del = sessions.DeleteBucket
			}
			if err := del(b.key); err != nil {
				return err
			}
			moved = append(moved, b.err)
			if !sandbox.IDPattern.Match(b.key) {
				continue // not a session id: nothing to list
			}
			v, err := json.Marshal(Lost{ID: string(b.key), Reason: clip("its stored record was unreadable: " + b.err.Reason), At: time.Now().UTC()})
			if err != nil {
				return err
			}
			if err := lost.Put(b.key, v); err != nil {
				return err
			}
		}
		return s.prune(lost, 0)
	})
	for i, e := range moved {
		if i == 20 {
			s.log.Warn().Int("more", len(moved)-i).Msg("more unreadable session records")
			break
		}
		s.log.Warn().Str("record", e.Key).Str("reason", e.Reason).Msg("session record unreadable: moved to the lost list")
	}
	return err
}

// update runs fn in a write transaction; a panic or a memory fault in it
// (a file corrupted since Open) is an error wrapping ErrCorrupt.
func (s *Store) update(op string, fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sessionstore: %s: %w: %v", op, ErrCorrupt, r)
		}
	}()
	if err := s.db.Update(fn); err != nil {
		return fmt.Errorf("sessionstore: %s: %w", op, err)
	}
	return nil
}

// view runs fn in a read transaction, like update.
func (s *Store) view(op string, fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sessionstore: %s: %w: %v", op, ErrCorrupt, r)
		}
	}()
	if err := s.db.View(fn); err != nil {
		return fmt.Errorf("sessionstore: %s: %w", op, err)
	}
	return nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Put writes records (new or updated) in one transaction. A record that
// cannot be stored (its id not a session id, over MaxRecordBytes) is left out, the others written,
// and its error returned.
func (s *Store) Put(recs ...Record) error {
	var skipped []error
	err := s.update("put", func(tx *bolt.Tx) error {
		skipped = skipped[:0]
		b := tx.Bucket(bucketSessions)
		for _, r := range recs {
			r.Version = 1 // what every gateway reads
			if len(r.NetworkDeny) > 0 || r.NetworkClosed || len(r.Volumes) > 0 {
				r.Version = 2
			}
			v, err := json.Marshal(r)
			switch {
			case err != nil:
			case !sandbox.IDPattern.MatchString(r.ID):
				err = errors.New("not a session id")
			case len(v) > s.cfg.MaxRecordBytes:
				err = fmt.Errorf("%d bytes, over %d", len(v), s.cfg.MaxRecordBytes)
			}
			if err != nil {
				skipped = append(skipped, fmt.Errorf("sessionstore: put %s: %w", r.ID, err))
				continue
			}
			if err := b.Put([]byte(r.ID), v); err != nil {
				return err
			}
		}
		return nil
	})
	return errors.Join(append(skipped, err)...)
}

// Delete forgets a session (deleted or expired).
func (s *Store) Delete(id string) error {
	return s.update("delete", func(tx *bolt.Tx) error { return tx.Bucket(bucketSessions).Delete([]byte(id)) })
}

// MarkLost moves a session's record to the lost list with a reason (at
// most 1 KiB of it is kept), pruning the list past LostMaxCount.
func (s *Store) MarkLost(r Record, reason string) error {
	v, err := json.Marshal(Lost{ID: r.ID, Tenant: r.Tenant, Reason: clip(reason), At: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("sessionstore: mark lost: %w", err)
	}
	return s.update("mark lost", func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSessions).Delete([]byte(r.ID)); err != nil {
			return err
		}
		lost := tx.Bucket(bucketLost)
		if err := lost.Put([]byte(r.ID), v); err != nil {
			return err
		}
		n := 0
		c := lost.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		if n <= s.cfg.LostMaxCount {
			return nil
		}
		// Down to 90%, so that the next ones do not each decode the list.
		return s.prune(lost, s.cfg.LostMaxCount/10)
	})
}

// prune deletes the lost entries that do not decode or are older than
// LostMaxAge, then the oldest past LostMaxCount-slack.
func (s *Store) prune(b *bolt.Bucket, slack int) error {
	type entry struct {
		key []byte
		at  time.Time
	}
	var keep []entry
	var drop, dropBuckets [][]byte
	cutoff := time.Now().Add(-s.cfg.LostMaxAge)
	err := b.ForEach(func(k, v []byte) error {
		var l Lost
		switch {
		case v == nil: // a nested bucket
			dropBuckets = append(dropBuckets, append([]byte(nil), k...))
			return nil
		case len(v) > s.cfg.MaxRecordBytes || json.Unmarshal(v, &l) != nil || l.At.Before(cutoff):
			drop = append(drop, append([]byte(nil), k...))
			return nil
		}
		keep = append(keep, entry{append([]byte(nil), k...), l.At})
		return nil
	})
	if err != nil {
		return err
	}
	if limit := s.cfg.LostMaxCount - slack; len(keep) > limit {
		sort.Slice(keep, func(i, j int) bool { return keep[i].at.Before(keep[j].at) })
		for _, e := range keep[:len(keep)-limit] {
			drop = append(drop, e.key)
		}
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	for _, k := range dropBuckets {
		if err := b.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

// clip bounds a reason.
func clip(s string) string { return printable(s, maxReasonBytes) }

// decode reads one stored record, checking what the store relies on.
func (s *Store) decode(k, v []byte) (Record, *RecordError) {
	bad := func(why string) (Record, *RecordError) {
		return Record{}, &RecordError{Key: printable(string(k), 80), Reason: why}
	}
	if len(v) > s.cfg.MaxRecordBytes {
		return bad(fmt.Sprintf("%d bytes, over %d", len(v), s.cfg.MaxRecordBytes))
	}
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		return bad("not a record: " + printable(err.Error(), 200))
	}
	switch {
	case r.Version > RecordVersion:
		return bad(fmt.Sprintf("written by a newer glassroom (record version %d; this one reads %d)", r.Version, RecordVersion))
	case r.Version < 0:
		return bad(fmt.Sprintf("record version %d", r.Version))
	case r.ID != string(k) || !sandbox.IDPattern.MatchString(r.ID):
		return bad("its id does not match its key")
	case r.Sandbox.ID != "" && r.Sandbox.ID != r.ID:
		return bad("its sandbox is another session's")
	case r.Tenant != "" && !sandbox.TenantPattern.MatchString(r.Tenant):
		return bad("its tenant is not a tenant id")
	case r.IdleTimeout < 0 || r.LastSeq < 0:
		return bad("negative idle timeout or event number")
	}
	return r, nil
}

// Sessions returns every record that can be read. Those that cannot are
// skipped, each a *RecordError joined in the error.
func (s *Store) Sessions() ([]Record, error) {
	var out []Record
	var errs []error
	err := s.view("read", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			r, rerr := s.decode(k, v)
			if rerr != nil {
				errs = append(errs, rerr)
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, errors.Join(errs...)
}

// Lost returns the sessions that could not be brought back, oldest first.
func (s *Store) Lost() ([]Lost, error) {
	var out []Lost
	err := s.view("read", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLost).ForEach(func(_, v []byte) error {
			var l Lost
			if len(v) <= s.cfg.MaxRecordBytes && json.Unmarshal(v, &l) == nil {
				out = append(out, l)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}
