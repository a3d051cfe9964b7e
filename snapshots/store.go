package snapshots

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Errors of the store.
var (
	// ErrNotFound: no snapshot of that id for the tenant.
	ErrNotFound = errors.New("snapshots: snapshot not found")
	// ErrTooLarge: the archive went past Config.MaxBytes, or past what
	// is left of the tenant's Config.TenantBytes.
	ErrTooLarge = errors.New("snapshots: snapshot too large")
	// ErrTooMany: the tenant holds Config.MaxPerTenant snapshots.
	ErrTooMany = errors.New("snapshots: too many snapshots")
)

// Config configures a Store. Zero fields take defaults.
type Config struct {
	// Dir holds the snapshots (made if missing). Required.
	Dir string
	// MaxBytes bounds one snapshot's archive (default 1 GiB).
	MaxBytes int64
	// TenantBytes bounds all of one tenant's archives (default 4 GiB).
	TenantBytes int64
	// MaxPerTenant bounds how many snapshots a tenant keeps (default 64).
	MaxPerTenant int
}

func (c Config) withDefaults() Config {
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 30
	}
	if c.TenantBytes == 0 {
		c.TenantBytes = 4 << 30
	}
	if c.MaxPerTenant == 0 {
		c.MaxPerTenant = 64
	}
	return c
}

// Validate checks c (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Dir == "" || !filepath.IsAbs(c.Dir):
		return errors.New("snapshots: Dir must be an absolute directory")
	case c.MaxBytes < 1<<20 || c.TenantBytes < c.MaxBytes:
		return errors.New("snapshots: MaxBytes must be at least 1 MiB and TenantBytes at least MaxBytes")
	case c.MaxPerTenant < 1:
		return errors.New("snapshots: MaxPerTenant must be positive")
	}
	return nil
}

// Info is a snapshot's manifest: what the gateway wrote of it.
type Info struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"` // the client's label (CreateSnapshotRequest.Name)
	Session   string    `json:"session_id"`     // the session it was taken of
	CreatedAt time.Time `json:"created_at"`
	SizeBytes int64     `json:"size_bytes"` // its archive's
	Contexts  []Context `json:"contexts"`
	// Purpose is "" for a client's snapshot, "hibernation" for the one a
	// hibernated session wakes from (not listed to the client).
	Purpose string `json:"purpose,omitempty"`
}

// Context is one kernel of a snapshot.
type Context struct {
	Context  string `json:"context"`  // its id in the source session
	Language string `json:"language"` // its kernel's canonical name
	Cwd      string `json:"cwd"`
	Default  bool   `json:"default"`
	// State names its state file in the archive ("": its variables were
	// not captured).
	State      string       `json:"state,omitempty"`
	Captured   []string     `json:"captured"`
	Uncaptured []Uncaptured `json:"uncaptured"`
}

// Uncaptured is a name a snapshot does not hold, and why ("*": all of a
// kernel's variables).
type Uncaptured struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Store keeps snapshots under Config.Dir: <hash of tenant>/<id>/ holds
// manifest.json and archive.tar; a snapshot being written is in
// .new-<id> beside them until Commit renames it.
type Store struct {
	cfg Config

	mu      sync.Mutex
	writing map[string]int64 // tenant dir → bytes written by open Writers
}

const (
	manifestName = "manifest.json"
	archiveName  = "archive.tar"
	newPrefix    = ".new-"
)

var idPattern = regexp.MustCompile(`^snap-[0-9a-f]{24}$`)

// New opens the store at cfg.Dir, removing what unfinished writes left.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("snapshots: open: %w", err)
	}
	tenants, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("snapshots: open: %w", err)
	}
	for _, t := range tenants {
		entries, _ := os.ReadDir(filepath.Join(cfg.Dir, t.Name()))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), newPrefix) {
				_ = os.RemoveAll(filepath.Join(cfg.Dir, t.Name(), e.Name()))
			}
		}
	}
	return &Store{cfg: cfg, writing: map[string]int64{}}, nil
}

// Config returns the store's configuration, with defaults.
func (s *Store) Config() Config { return s.cfg }

func (s *Store) tenantDir(tenant string) string {
	sum := sha256.Sum256([]byte("glassroom-snapshots\x00" + tenant))
	return hex.EncodeToString(sum[:16])
}

// ValidID reports whether id has the form of a snapshot id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// List returns the tenant's snapshots, newest first.
func (s *Store) List(tenant string) ([]Info, error) {
	dir := filepath.Join(s.cfg.Dir, s.tenantDir(tenant))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return []Info{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshots: list: %w", err)
	}
	out := []Info{}
	for _, e := range entries {
		if !ValidID(e.Name()) {
			continue
		}
		in, err := readManifest(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // being deleted
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

func readManifest(dir string) (Info, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return Info{}, err
	}
	var in Info
	if err := json.Unmarshal(b, &in); err != nil {
		return Info{}, fmt.Errorf("snapshots: manifest of %s: %w", filepath.Base(dir), err)
	}
	return in, nil
}

// Get returns the tenant's snapshot id.
func (s *Store) Get(tenant, id string) (Info, error) {
	if !ValidID(id) {
		return Info{}, ErrNotFound
	}
	in, err := readManifest(filepath.Join(s.cfg.Dir, s.tenantDir(tenant), id))
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("snapshots: get: %w", err)
	}
	return in, nil
}

// Open returns the tenant's snapshot id and its archive, which the caller
// closes.
func (s *Store) Open(tenant, id string) (Info, io.ReadCloser, error) {
	in, err := s.Get(tenant, id)
	if err != nil {
		return Info{}, nil, err
	}
	f, err := os.Open(filepath.Join(s.cfg.Dir, s.tenantDir(tenant), id, archiveName))
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, nil, ErrNotFound
	}
	if err != nil {
		return Info{}, nil, fmt.Errorf("snapshots: open: %w", err)
	}
	return in, f, nil
}

// Delete removes the tenant's snapshot id.
func (s *Store) Delete(tenant, id string) error {
	if !ValidID(id) {
		return ErrNotFound
	}
	dir := filepath.Join(s.cfg.Dir, s.tenantDir(tenant), id)
	gone := filepath.Join(s.cfg.Dir, s.tenantDir(tenant), newPrefix+id+"-deleted")
	if err := os.Rename(dir, gone); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ErrNotFound
		}
		return fmt.Errorf("snapshots: delete: %w", err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("snapshots: delete: %w", err)
	}
	return nil
}

// Create starts a snapshot of tenant: the caller writes its archive to
// the Writer, then Commits it with its manifest or Aborts it. It fails
// with ErrTooMany when the tenant holds Config.MaxPerTenant snapshots.
func (s *Store) Create(tenant string) (*Writer, error) {
	list, err := s.List(tenant)
	if err != nil {
		return nil, err
	}
	if len(list) >= s.cfg.MaxPerTenant {
		return nil, fmt.Errorf("%w: a tenant keeps at most %d (delete some)", ErrTooMany, s.cfg.MaxPerTenant)
	}
	var used int64
	for _, in := range list {
		used += in.SizeBytes
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("snapshots: create: %w", err)
	}
	id := "snap-" + hex.EncodeToString(b[:])
	td := s.tenantDir(tenant)
	tmp := filepath.Join(s.cfg.Dir, td, newPrefix+id)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("snapshots: create: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, archiveName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("snapshots: create: %w", err)
	}
	return &Writer{s: s, id: id, tenantDir: td, tmp: tmp, f: f, used: used}, nil
}

// Writer writes one snapshot's archive. It is not safe for concurrent
// use; the caller must Commit or Abort it.
type Writer struct {
	s         *Store
	id        string
	tenantDir string
	tmp       string
	f         *os.File
	used      int64 // the tenant's committed bytes when it began
	n         int64
	err       error
	done      bool
}

// ID is the snapshot's id.
func (w *Writer) ID() string { return w.id }

// Write appends p to the archive; past a bound it fails with ErrTooLarge
// (and so do all later writes).
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	s := w.s
	s.mu.Lock()
	others := s.writing[w.tenantDir]
	if w.n+int64(len(p)) > s.cfg.MaxBytes {
		w.err = fmt.Errorf("%w: a snapshot holds at most %d MiB", ErrTooLarge, s.cfg.MaxBytes>>20)
	} else if w.used+others+int64(len(p)) > s.cfg.TenantBytes {
		w.err = fmt.Errorf("%w: a tenant's snapshots hold at most %d MiB together (delete some)", ErrTooLarge, s.cfg.TenantBytes>>20)
	} else {
		s.writing[w.tenantDir] = others + int64(len(p))
	}
	s.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("snapshots: write: %w", err)
	}
	return n, w.err
}

func (w *Writer) release() {
	w.s.mu.Lock()
	if left := w.s.writing[w.tenantDir] - w.n; left > 0 {
		w.s.writing[w.tenantDir] = left
	} else {
		delete(w.s.writing, w.tenantDir)
	}
	w.s.mu.Unlock()
}

// Commit ends the archive and keeps the snapshot with manifest (its ID,
// SizeBytes and, when zero, CreatedAt are set here), which it returns.
func (w *Writer) Commit(manifest Info) (Info, error) {
	if w.done {
		return Info{}, errors.New("snapshots: commit: already ended")
	}
	if w.err != nil {
		w.Abort()
		return Info{}, w.err
	}
	w.done = true
	defer w.release()
	manifest.ID, manifest.SizeBytes = w.id, w.n
	if manifest.CreatedAt.IsZero() {
		manifest.CreatedAt = time.Now().UTC()
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var b []byte
		if b, err = json.Marshal(manifest); err == nil {
			err = os.WriteFile(filepath.Join(w.tmp, manifestName), b, 0o600)
		}
	}
	if err == nil {
		err = os.Rename(w.tmp, filepath.Join(w.s.cfg.Dir, w.tenantDir, w.id))
	}
	if err != nil {
		_ = os.RemoveAll(w.tmp)
		return Info{}, fmt.Errorf("snapshots: commit: %w", err)
	}
	return manifest, nil
}

// Abort drops the snapshot; it may be called after Commit (it does
// nothing then).
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.release()
	_ = w.f.Close()
	_ = os.RemoveAll(w.tmp)
}
