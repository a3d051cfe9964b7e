package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Resolver looks names up for the proxy. *net.Resolver implements it;
// tests pass one that answers from a table, so no query leaves the machine.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is the operator's egress settings, shared by every session's
// proxy. Zero fields take the defaults named in their comments.
type Config struct {
	// Dir holds one directory per session proxy, <Dir>/<session id>, with
	// its socket. Sandbox uids must be able to traverse it; with the docker
	// runtime it must be the same path on the host as in the gateway.
	// Default /run/glassroom/egress as root, else
	// $TMPDIR/glassroom-egress-<uid>.
	Dir string
	// Allow is the ceiling: the patterns (ParsePattern) a session may ask
	// for. A session's list must stay within it (Policy.Within). Empty: no
	// session may ask for a network.
	Allow []string
	// AllowPrivate lists the non-public ranges (loopback, private, ...)
	// the proxy may dial all the same. It does not open the host's own
	// addresses (but loopback) nor the cloud providers' service addresses
	// in those ranges: see AllowAddress. Default none.
	AllowPrivate []netip.Prefix
	// AllowAddress lists addresses the proxy may dial whatever they are:
	// an address of the gateway host itself (bound on its interfaces), a
	// cloud provider's service address (ProviderAddrs) or a non-public
	// one. Default none.
	AllowAddress []netip.Prefix
	// HostAddrs lists the addresses bound on the host's interfaces, which
	// the proxy refuses (InterfaceAddrs). Tests pass a fake.
	HostAddrs func() ([]netip.Addr, error)
	// HostAddrsTTL is how long a listing of the host's addresses is used
	// before the next check reads them again (5 s).
	HostAddrsTTL time.Duration
	// RateBytes bounds each session's traffic in each direction, in bytes
	// per second, all its connections together (2,000,000: 16 Mbit/s).
	RateBytes int64
	// MaxConns bounds a session's open connections; one more gets a 429 (16).
	MaxConns int
	// ConnRate bounds how many connections a session opens per second
	// (50, with bursts of twice that); faster ones wait to be accepted.
	// Each is a log line, and a refused one an event: this bounds both.
	ConnRate float64
	// DialTimeout bounds resolving and connecting (10 s).
	DialTimeout time.Duration
	// HeadTimeout bounds reading a request's head (10 s).
	HeadTimeout time.Duration
	// MaxHeadBytes bounds a request's head (64 KiB).
	MaxHeadBytes int
	// IdleTimeout ends a connection (a tunnel, or a plain request waiting
	// for its response) no byte crossed, either way, for this long (5 min).
	IdleTimeout time.Duration
	// MaxConnDuration ends a connection this long after its request was
	// read, however busy (1 h).
	MaxConnDuration time.Duration
	// Resolver resolves names (net.DefaultResolver).
	Resolver Resolver
}

func (c Config) withDefaults() Config {
	if c.Dir == "" {
		c.Dir = filepath.Join(os.TempDir(), "glassroom-egress-"+strconv.Itoa(os.Geteuid()))
		if os.Geteuid() == 0 {
			c.Dir = "/run/glassroom/egress"
		}
	}
	if c.RateBytes == 0 {
		c.RateBytes = 2_000_000
	}
	if c.MaxConns == 0 {
		c.MaxConns = 16
	}
	if c.ConnRate == 0 {
		c.ConnRate = 50
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.HeadTimeout == 0 {
		c.HeadTimeout = 10 * time.Second
	}
	if c.MaxHeadBytes == 0 {
		c.MaxHeadBytes = 64 << 10
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.MaxConnDuration == 0 {
		c.MaxConnDuration = time.Hour
	}
	if c.HostAddrsTTL == 0 {
		c.HostAddrsTTL = 5 * time.Second
	}
	if c.HostAddrs == nil {
		c.HostAddrs = InterfaceAddrs
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	return c
}

// DefaultConfig returns the configuration with every default filled in
// but the resolver and the host's addresses (what a zero Config means);
// command-line flags start from it.
func DefaultConfig() Config {
	c := Config{}.withDefaults()
	c.Resolver, c.HostAddrs = nil, nil
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if !filepath.IsAbs(c.Dir) {
		return errors.New("egress: config: dir must be an absolute path")
	}
	if _, err := ParsePolicy(c.Allow); err != nil {
		return fmt.Errorf("egress: config: allow: %w", err)
	}
	for _, p := range c.AllowPrivate {
		if !p.IsValid() {
			return errors.New("egress: config: allow-private: invalid prefix")
		}
	}
	for _, p := range c.AllowAddress {
		if !p.IsValid() {
			return errors.New("egress: config: allow-address: invalid prefix")
		}
	}
	if c.RateBytes < 1 || c.MaxConns < 1 || c.ConnRate <= 0 || c.DialTimeout < 0 || c.HeadTimeout < 0 || c.MaxHeadBytes < 1024 {
		return errors.New("egress: config: limits must be positive (and the head limit at least 1 KiB)")
	}
	if c.IdleTimeout < 0 || c.MaxConnDuration < 0 || c.HostAddrsTTL < 0 {
		return errors.New("egress: config: idle timeout, connection duration and host address TTL must be positive")
	}
	return nil
}
