// Package sessionstore keeps what a gateway needs to bring its sessions
// back after a restart or a crash: for each session its tenant, limits,
// timing, runtime and the sandbox's State (handle and kernel connection,
// key included). It is an embedded bbolt database under the state
// directory, one file of mode 0600.
//
// bbolt, rather than SQLite: it is pure Go (no cgo, so the gateway stays
// one static binary, and the image FROM scratch), keeps one ordered
// key/value file with ACID transactions and crash safety (copy-on-write
// B+tree, fsync on commit), is maintained by etcd, and is all this needs:
// records by id, read whole at start.
package sessionstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	bolt "go.etcd.io/bbolt"
)

// Record is one session as the store keeps it.
type Record struct {
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
	Network []string      `json:"network,omitempty"`
	Sandbox sandbox.State `json:"sandbox"`
}

// Lost is a session that could not be brought back, and why.
type Lost struct {
	ID     string    `json:"id"`
	Tenant string    `json:"tenant"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

var (
	bucketSessions = []byte("sessions")
	bucketLost     = []byte("lost")
)

// Store is the session store. Its methods are safe for concurrent use;
// each write is one transaction, committed (fsync) before it returns.
type Store struct {
	db *bolt.DB
}

// FileName is the store's file in the state directory.
const FileName = "sessions.db"

// Open opens (creating) the store in dir, with mode 0600. The caller must
// Close it.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("sessionstore: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("sessionstore: open %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil { // an older file may be wider
		_ = db.Close()
		return nil, fmt.Errorf("sessionstore: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSessions, bucketLost} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sessionstore: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Put writes records (new or updated) in one transaction.
func (s *Store) Put(recs ...Record) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		for _, r := range recs {
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(r.ID), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sessionstore: put: %w", err)
	}
	return nil
}

// Delete forgets a session (deleted or expired).
func (s *Store) Delete(id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSessions).Delete([]byte(id)) })
	if err != nil {
		return fmt.Errorf("sessionstore: delete: %w", err)
	}
	return nil
}

// MarkLost moves a session's record to the lost list with a reason.
func (s *Store) MarkLost(r Record, reason string) error {
	v, err := json.Marshal(Lost{ID: r.ID, Tenant: r.Tenant, Reason: reason, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSessions).Delete([]byte(r.ID)); err != nil {
			return err
		}
		return tx.Bucket(bucketLost).Put([]byte(r.ID), v)
	})
	if err != nil {
		return fmt.Errorf("sessionstore: mark lost: %w", err)
	}
	return nil
}

// Sessions returns every record. A record that does not decode is
// returned as an error joined to the others (it is skipped).
func (s *Store) Sessions() ([]Record, error) {
	var out []Record
	var errs []error
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil || r.ID != string(k) {
				errs = append(errs, fmt.Errorf("sessionstore: record %q unreadable", k))
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sessionstore: read: %w", err)
	}
	return out, errors.Join(errs...)
}

// Lost returns the sessions that could not be brought back.
func (s *Store) Lost() ([]Lost, error) {
	var out []Lost
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLost).ForEach(func(_, v []byte) error {
			var l Lost
			if json.Unmarshal(v, &l) == nil {
				out = append(out, l)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sessionstore: read: %w", err)
	}
	return out, nil
}
