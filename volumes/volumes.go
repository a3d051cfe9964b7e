package volumes

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

var (
	// ErrNotFound says the tenant has no volume of that name.
	ErrNotFound = errors.New("volumes: volume not found")
	// ErrExists says the tenant has a volume of that name already.
	ErrExists = errors.New("volumes: a volume of this name exists")
	// ErrInUse says a session mounts the volume.
	ErrInUse = errors.New("volumes: the volume is mounted by a session")
	// ErrTooMany says the tenant has Config.MaxPerTenant volumes.
	ErrTooMany = errors.New("volumes: too many volumes")
	// ErrUnsupported says this gateway keeps no volumes (not root, no loop
	// devices).
	ErrUnsupported = errors.New("volumes: this gateway keeps no volumes")
)

// InvalidError is a refused name or size; Public says why.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "volumes: " + e.Reason }

// Public is the reason, for the client.
func (e *InvalidError) Public() string { return e.Reason }

// NamePattern is a volume's name: lower-case letters, digits, - and _.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Config configures a Store. Zero fields take defaults.
type Config struct {
	// Dir holds the volumes: <Dir>/<tenant key>/<name>.img, mounted at
	// <Dir>/<tenant key>/<name>/. Required.
	Dir string
	// DefaultMB is a new volume's size when the request gives none
	// (default 1024); MaxMB the largest (default 10240). Images are
	// sparse: a volume costs the disk it holds.
	DefaultMB, MaxMB int
	// MaxPerTenant bounds a tenant's volumes (default 32).
	MaxPerTenant int
}

func (c Config) withDefaults() Config {
	if c.DefaultMB == 0 {
		c.DefaultMB = 1024
	}
	if c.MaxMB == 0 {
		c.MaxMB = 10240
	}
	if c.MaxPerTenant == 0 {
		c.MaxPerTenant = 32
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Dir == "" || !filepath.IsAbs(c.Dir):
		return errors.New("volumes: config: Dir must be an absolute path")
	case c.DefaultMB < minMB || c.MaxMB < c.DefaultMB || c.MaxPerTenant < 1:
		return fmt.Errorf("volumes: config: sizes must be %d <= DefaultMB <= MaxMB, MaxPerTenant >= 1", minMB)
	}
	return nil
}

// minMB is the smallest volume: ext4 needs room for its own metadata.
const minMB = 16

// Info describes a volume.
type Info struct {
	Name      string    `json:"name"`
	SizeMB    int       `json:"size_mb"`
	UsedBytes int64     `json:"used_bytes"`
	CreatedAt time.Time `json:"created_at"`
	// Mounts is how many live sessions mount it.
	Mounts int `json:"mounts"`
}

// meta is what the store keeps beside an image.
type meta struct {
	Name      string    `json:"name"`
	SizeMB    int       `json:"size_mb"`
	CreatedAt time.Time `json:"created_at"`
}

// Store keeps tenants' named volumes: each an ext4 image of its size
// (its quota), loop-mounted on the host while the gateway runs, and bound
// into the workspaces of the sessions that mount it. A volume outlives
// its sessions; several may mount it at once. Every file created in it
// is open to every sandbox that mounts it (a default ACL: no umask), as
// the sandboxes' users differ. Safe for concurrent use.
type Store struct {
	cfg Config
	log zerolog.Logger

	mu   sync.Mutex
	refs map[string]int // tenant key/name → sessions mounting it
}

// Open opens the store in cfg.Dir and mounts the volumes that are not
// (the host rebooted, or the gateway ran elsewhere). ErrUnsupported
// without root or loop devices.
func Open(ctx context.Context, cfg Config, log zerolog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: volumes are loop-mounted images, which needs root", ErrUnsupported)
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return nil, fmt.Errorf("%w: no loop devices: %w", ErrUnsupported, err)
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	s := &Store{cfg: cfg, log: log, refs: map[string]int{}}
	tenants, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("volumes: %w", err)
	}
	for _, t := range tenants {
		if !t.IsDir() {
			continue
		}
		metas, _ := filepath.Glob(filepath.Join(cfg.Dir, t.Name(), "*.json"))
		for _, m := range metas {
			name := strings.TrimSuffix(filepath.Base(m), ".json")
			if err := s.ensureMounted(ctx, filepath.Join(cfg.Dir, t.Name()), name); err != nil {
				log.Warn().Err(err).Str("volume", name).Msg("volume not mounted")
			}
		}
	}
	return s, nil
}

// tenantDir is where tenant's volumes are: a hash of the tenant, so that
// no tenant name reaches a path.
func (s *Store) tenantDir(tenant string) string {
	h := sha256.Sum256([]byte("glassroom volumes\x00" + tenant))
	return filepath.Join(s.cfg.Dir, hex.EncodeToString(h[:12]))
}

func checkName(name string) error {
	if !NamePattern.MatchString(name) {
		return &InvalidError{Reason: "a volume's name is 1 to 63 lower-case letters, digits, - and _, starting with a letter or digit"}
	}
	return nil
}

// Create makes tenant's volume name of sizeMB (0: the default).
func (s *Store) Create(ctx context.Context, tenant, name string, sizeMB int) (Info, error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}
	if sizeMB == 0 {
		sizeMB = s.cfg.DefaultMB
	}
	if sizeMB < minMB || sizeMB > s.cfg.MaxMB {
		return Info{}, &InvalidError{Reason: fmt.Sprintf("size_mb must be within %d..%d", minMB, s.cfg.MaxMB)}
	}
	dir := s.tenantDir(tenant)
	m, err := s.create(ctx, dir, name, sizeMB)
	if err != nil {
		return Info{}, err
	}
	s.log.Info().Str("volume", name).Int("size_mb", sizeMB).Msg("volume created")
	return s.info(dir, m), nil
}

// create makes the volume, one at a time (creations are rare: it keeps
// the count and the name checks simple).
func (s *Store) create(ctx context.Context, dir, name string, sizeMB int) (meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return meta{}, fmt.Errorf("volumes: create: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, name+".json")); err == nil {
		return meta{}, fmt.Errorf("%w: %s", ErrExists, name)
	}
	if metas, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(metas) >= s.cfg.MaxPerTenant {
		return meta{}, fmt.Errorf("%w (at most %d)", ErrTooMany, s.cfg.MaxPerTenant)
	}
	if err := s.roomFor(int64(sizeMB) << 20); err != nil {
		return meta{}, err
	}
	img := filepath.Join(dir, name+".img")
	f, err := os.OpenFile(img, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return meta{}, fmt.Errorf("volumes: create: %w", err)
	}
	err = f.Truncate(int64(sizeMB) << 20) // sparse
	f.Close()
	if err == nil {
		err = run(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-E", "root_owner=0:0", "-L", "glassroom", img)
	}
	m := meta{Name: name, SizeMB: sizeMB, CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if err == nil {
		err = s.mountImage(ctx, dir, name)
	}
	if err == nil {
		err = writeMeta(filepath.Join(dir, name+".json"), m) // last: a volume without it does not exist
	}
	if err != nil {
		_ = unmount(filepath.Join(dir, name))
		os.Remove(filepath.Join(dir, name))
		os.Remove(img)
		return meta{}, fmt.Errorf("volumes: create %s: %w", name, err)
	}
	return m, nil
}

// ErrNoRoom says the disk under the store cannot hold a new volume of
// that size beside what the others may still grow to.
var ErrNoRoom = errors.New("volumes: no room on the gateway's disk for a volume of this size")

// roomFor checks that the store's file system can hold size more bytes
// on top of what every volume may still grow to (their images are
// sparse: nothing is overcommitted).
func (s *Store) roomFor(size int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(s.cfg.Dir, &st); err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	free := int64(st.Bavail) * st.Bsize
	metas, _ := filepath.Glob(filepath.Join(s.cfg.Dir, "*", "*.json"))
	var owed int64
	for _, p := range metas {
		m, err := readMeta(p)
		if err != nil {
			continue
		}
		var img unix.Stat_t
		if unix.Stat(strings.TrimSuffix(p, ".json")+".img", &img) == nil {
			owed += max(0, int64(m.SizeMB)<<20-img.Blocks*512) // what its image may still take
		}
	}
	if free-owed < size {
		return fmt.Errorf("%w (%d MiB free, %d MiB promised to the other volumes)", ErrNoRoom, free>>20, owed>>20)
	}
	return nil
}

// mountImage mounts dir/name.img on dir/name and opens its root to the
// sandboxes: mode 0777 and a default ACL that gives every file created
// in it to them all.
func (s *Store) mountImage(ctx context.Context, dir, name string) error {
	mnt := filepath.Join(dir, name)
	if err := os.Mkdir(mnt, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := run(ctx, "mount", "-t", "ext4", "-o", "loop,nosuid,nodev", filepath.Join(dir, name+".img"), mnt); err != nil {
		return err
	}
	if err := os.Chmod(mnt, 0o777); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(mnt, "lost+found")) // empty on a new volume; kept on one that has a use for it
	return unix.Setxattr(mnt, "system.posix_acl_default", openACL(), 0)
}

// openACL is a POSIX ACL (xattr form) of rwx for owner, group and
// others: as a default ACL, what is created under it keeps its creation
// mode whatever the process's umask.
func openACL() []byte {
	b := make([]byte, 4+3*8)
	binary.LittleEndian.PutUint32(b, 2)              // version
	for i, tag := range []uint16{0x01, 0x04, 0x20} { // user_obj, group_obj, other
		e := b[4+i*8:]
		binary.LittleEndian.PutUint16(e, tag)
		binary.LittleEndian.PutUint16(e[2:], 7)
		binary.LittleEndian.PutUint32(e[4:], 0xffffffff)
	}
	return b
}

// ensureMounted mounts a volume whose image is not mounted.
func (s *Store) ensureMounted(ctx context.Context, dir, name string) error {
	if mounted(filepath.Join(dir, name)) {
		return nil
	}
	return s.mountImage(ctx, dir, name)
}

// List returns tenant's volumes by name.
func (s *Store) List(tenant string) ([]Info, error) {
	dir := s.tenantDir(tenant)
	metas, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	out := make([]Info, 0, len(metas))
	for _, p := range metas {
		m, err := readMeta(p)
		if err != nil {
			continue
		}
		out = append(out, s.info(dir, m))
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Get returns tenant's volume name.
func (s *Store) Get(tenant, name string) (Info, error) {
	if checkName(name) != nil {
		return Info{}, ErrNotFound
	}
	dir := s.tenantDir(tenant)
	m, err := readMeta(filepath.Join(dir, name+".json"))
	if err != nil {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return s.info(dir, m), nil
}

func (s *Store) info(dir string, m meta) Info {
	in := Info{Name: m.Name, SizeMB: m.SizeMB, CreatedAt: m.CreatedAt}
	var st unix.Statfs_t
	if unix.Statfs(filepath.Join(dir, m.Name), &st) == nil && mounted(filepath.Join(dir, m.Name)) {
		in.UsedBytes = int64(st.Blocks-st.Bfree) * st.Bsize
	}
	s.mu.Lock()
	in.Mounts = s.refs[filepath.Join(dir, m.Name)]
	s.mu.Unlock()
	return in
}

// Delete deletes tenant's volume name and what it holds; ErrInUse while
// a session mounts it.
func (s *Store) Delete(ctx context.Context, tenant, name string) error {
	if checkName(name) != nil {
		return ErrNotFound
	}
	dir := s.tenantDir(tenant)
	mnt := filepath.Join(dir, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, name+".json")); err != nil {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if s.refs[mnt] > 0 {
		return fmt.Errorf("%w (%d sessions): end them first", ErrInUse, s.refs[mnt])
	}
	if err := os.Remove(filepath.Join(dir, name+".json")); err != nil {
		return fmt.Errorf("volumes: delete: %w", err)
	}
	if err := unmount(mnt); err != nil {
		s.log.Warn().Err(err).Str("volume", name).Msg("volume not unmounted")
	}
	os.Remove(mnt)
	if err := os.Remove(filepath.Join(dir, name+".img")); err != nil {
		return fmt.Errorf("volumes: delete: %w", err)
	}
	s.log.Info().Str("volume", name).Msg("volume deleted")
	return nil
}

// Acquire returns the host directory of tenant's volume name for a
// session to mount; the session calls release once it no longer does
// (Delete refuses until then).
func (s *Store) Acquire(ctx context.Context, tenant, name string) (string, func(), error) {
	if checkName(name) != nil {
		return "", nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	dir := s.tenantDir(tenant)
	mnt := filepath.Join(dir, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, name+".json")); err != nil {
		return "", nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err := s.ensureMounted(ctx, dir, name); err != nil {
		return "", nil, fmt.Errorf("volumes: mount %s: %w", name, err)
	}
	s.refs[mnt]++
	var once sync.Once
	return mnt, func() {
		once.Do(func() {
			s.mu.Lock()
			if s.refs[mnt]--; s.refs[mnt] <= 0 {
				delete(s.refs, mnt)
			}
			s.mu.Unlock()
		})
	}, nil
}

func writeMeta(path string, m meta) error {
	b, _ := json.Marshal(m) // plain fields: cannot fail
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readMeta(path string) (meta, error) {
	var m meta
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err == nil && checkName(m.Name) != nil {
		err = errors.New("bad name")
	}
	return m, err
}

// mounted reports whether dir is a mount point (another device than its
// parent's).
func mounted(dir string) bool {
	var a, b unix.Stat_t
	if unix.Lstat(dir, &a) != nil || unix.Lstat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

func unmount(dir string) error {
	if !mounted(dir) {
		return nil
	}
	return unix.Unmount(dir, unix.MNT_DETACH)
}

// run runs a tool, bounded by ctx and a minute.
func run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Close unmounts the volumes no session holds (those a session kept for
// the next gateway stay mounted); Open mounts them again. The store
// must not be used after.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	mnts, _ := filepath.Glob(filepath.Join(s.cfg.Dir, "*", "*"))
	var errs []error
	for _, m := range mnts {
		if s.refs[m] > 0 || strings.Contains(filepath.Base(m), ".") {
			continue
		}
		if err := unmount(m); err != nil {
			errs = append(errs, fmt.Errorf("volumes: unmount %s: %w", filepath.Base(m), err))
		}
	}
	return errors.Join(errs...)
}
