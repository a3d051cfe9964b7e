package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// SocketName is the name of a proxy's socket in its directory.
const SocketName = "proxy.sock"

// idPattern is the shape of a session id (kernel/runtime/sandbox.IDPattern): it
// names a directory, so nothing else is accepted.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{7,63}$`)

// Service holds the operator's egress settings and starts one Proxy per
// session. Its settings are immutable; the only state it keeps is the
// host's addresses, read again as they age (Config.HostAddrsTTL). Safe
// for concurrent use.
type Service struct {
	cfg     Config
	ceiling Policy
	rules   *addressRules // shared by every proxy
	log     zerolog.Logger
}

// NewService checks cfg and returns the service. It touches nothing on
// disk: the directories a previous gateway left are either resumed (Resume,
// for the sessions it adopts) or removed (RemoveStale, after that).
func NewService(cfg Config, log zerolog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ceiling, _ := ParsePolicy(cfg.Allow) // checked by Validate
	log = log.With().Str("component", "egress").Logger()
	rules := &addressRules{
		allowPrivate: cfg.AllowPrivate, allowAddress: cfg.AllowAddress,
		host: &hostAddrs{list: cfg.HostAddrs, ttl: cfg.HostAddrsTTL, log: log},
	}
	return &Service{cfg: cfg, ceiling: ceiling, rules: rules, log: log}, nil
}

// Enabled reports whether sessions may ask for a network at all (the
// operator set a ceiling).
func (s *Service) Enabled() bool { return !s.ceiling.Empty() }

// Ceiling returns the operator's ceiling.
func (s *Service) Ceiling() Policy { return s.ceiling }

// Admit parses a session's allowlist and checks it against the ceiling.
// The error is a *PatternError naming the refused pattern.
func (s *Service) Admit(allow []string) (Policy, error) {
	pol, err := ParsePolicy(allow)
	if err != nil {
		return Policy{}, err
	}
	if err := pol.Within(s.ceiling); err != nil {
		return Policy{}, err
	}
	return pol, nil
}

// Start starts the proxy of session id with policy pol (from Admit),
// listening on <Dir>/<id>/SocketName. notify, if not nil, is called for
// every decision, from the connection's goroutine; it must not block. The
// caller must Close the proxy.
func (s *Service) Start(id string, pol Policy, notify func(Decision)) (*Proxy, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("egress: start: session id %q", id)
	}
	if pol.Empty() {
		return nil, errors.New("egress: start: empty policy (a session without a list has no proxy)")
	}
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.cfg.Dir, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("egress: start: %w", err)
	}
	p, err := newProxy(s, id, pol, dir, notify)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// ErrNoDirectory is returned by Resume when the session's proxy directory
// is gone: a sandbox that bound it sees a deleted directory, and no new
// socket can reach it.
var ErrNoDirectory = errors.New("egress: resume: the proxy's directory is gone")

// Resume starts session id's proxy again, in the directory a previous
// gateway's proxy of the session left (Proxy.Detach, or a crash): the
// sandbox, which binds the directory, reaches the new socket at the same
// path. A socket file left there is replaced. pol must come from Admit,
// or be empty: the proxy of a session whose network was closed
// (SetPolicy with an empty policy) comes back refusing everything.
func (s *Service) Resume(id string, pol Policy, notify func(Decision)) (*Proxy, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("egress: resume: session id %q", id)
	}
	dir := filepath.Join(s.cfg.Dir, id)
	st, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoDirectory
	}
	if err != nil {
		return nil, fmt.Errorf("egress: resume: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("egress: resume: %s is not a directory", dir)
	}
	if err := os.Remove(filepath.Join(dir, SocketName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("egress: resume: %w", err)
	}
	return newProxy(s, id, pol, dir, notify)
}

// RemoveStale removes the proxy directories nobody listens on: what a
// previous gateway left for sessions that were not adopted. Call it once
// the sessions that could be adopted were (Resume). A directory younger
// than a minute is left (a proxy being started right now).
func (s *Service) RemoveStale() { s.removeStale() }

// prepareDir creates Dir (mode 0711: sandbox uids may traverse it, not
// list it) and, as root, checks that every parent is searchable: the
// local runtime opens bind sources as the sandbox's uid.
func (s *Service) prepareDir() error {
	if err := os.MkdirAll(s.cfg.Dir, 0o711); err != nil {
		return fmt.Errorf("egress: dir: %w", err)
	}
	if err := os.Chmod(s.cfg.Dir, 0o711); err != nil {
		return fmt.Errorf("egress: dir: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	for d := s.cfg.Dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("egress: dir: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("egress: dir %s: %s is not searchable by other users (mode %v); sandbox uids need o+x on every parent", s.cfg.Dir, d, st.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// staleAge is how old a socket-less directory must be before it is
// removed as stale: a proxy being started right now has one for an instant.
const staleAge = time.Minute

// dialSocket connects to the socket in a proxy's directory through a
// descriptor of the directory (a socket address is limited to 107 bytes).
func dialSocket(dir string) (net.Conn, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return net.DialTimeout("unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+SocketName, time.Second)
}

// removeStale removes proxy directories whose socket nobody listens on.
func (s *Service) removeStale() {
	ents, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return // no directory yet
	}
	for _, e := range ents {
		if !e.IsDir() || !idPattern.MatchString(e.Name()) {
			continue
		}
		dir := filepath.Join(s.cfg.Dir, e.Name())
		if st, err := os.Stat(dir); err != nil || time.Since(st.ModTime()) < staleAge {
			continue
		}
		c, err := dialSocket(dir)
		if err == nil {
			c.Close() // a live proxy (another gateway sharing the directory)
			continue
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			continue
		}
		s.log.Info().Str("dir", dir).Msg("removing a stale egress proxy directory")
		if err := os.RemoveAll(dir); err != nil {
			s.log.Warn().Err(err).Str("dir", dir).Msg("removing a stale egress proxy directory failed")
		}
	}
}
