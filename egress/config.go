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
	// the proxy may dial all the same. Default none.
	AllowPrivate []netip.Prefix
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
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	return c
}

// DefaultConfig returns the configuration with every default filled in
// but the resolver (what a zero Config means); command-line flags start
// from it.
func DefaultConfig() Config {
	c := Config{}.withDefaults()
	c.Resolver = nil
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
	if c.RateBytes < 1 || c.MaxConns < 1 || c.ConnRate <= 0 || c.DialTimeout < 0 || c.HeadTimeout < 0 || c.MaxHeadBytes < 1024 {
		return errors.New("egress: config: limits must be positive (and the head limit at least 1 KiB)")
	}
	return nil
}
