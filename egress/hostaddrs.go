package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// InterfaceAddrs returns the addresses bound on the host's network
// interfaces (net.InterfaceAddrs, zones dropped, IPv4-mapped ones
// unmapped): Config.HostAddrs's default.
func InterfaceAddrs() ([]netip.Addr, error) {
	list, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("egress: interface addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, addr.Unmap().WithZone(""))
		}
	}
	return out, nil
}

// hostAddrs is the set of the host's own addresses, read again (lazily,
// by the check that needs it) once it is older than ttl, so addresses
// the host gains are refused within ttl. Safe for concurrent use; a check
// that finds the set stale reads the interfaces while the others wait (a
// netlink dump: well under a millisecond).
type hostAddrs struct {
	list func() ([]netip.Addr, error)
	ttl  time.Duration
	log  zerolog.Logger

	mu      sync.Mutex
	set     map[netip.Addr]struct{} // nil until the first successful read
	read    time.Time
	failing bool // the last read failed (logged once per run of failures)
}

// errHostAddrs: the host's addresses could never be read, so no address
// can be checked against them.
var errHostAddrs = errors.New("egress: the host's addresses are unknown")

// contains reports whether a is bound on one of the host's interfaces.
// When the interfaces cannot be read, the last set read is used (and the
// read is tried again by the next check); before any was read, it fails.
func (h *hostAddrs) contains(a netip.Addr) (bool, error) {
	a = a.Unmap().WithZone("")
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := time.Now(); h.set == nil || now.Sub(h.read) >= h.ttl {
		list, err := h.list()
		switch {
		case err != nil:
			if !h.failing {
				h.log.Warn().Err(err).Msg("egress: cannot read the host's interface addresses; using the last ones read")
			}
			h.failing = true
			if h.set == nil {
				return false, fmt.Errorf("%w: %w", errHostAddrs, err)
			}
		default:
			h.failing = false
			set := make(map[netip.Addr]struct{}, len(list))
			for _, x := range list {
				set[x.Unmap().WithZone("")] = struct{}{}
			}
			h.set, h.read = set, now
		}
	}
	_, ok := h.set[a]
	return ok, nil
}

// addressRules decides which resolved addresses the proxies may dial.
// Safe for concurrent use.
type addressRules struct {
	allowPrivate []netip.Prefix // lift the special-range rule
	allowAddress []netip.Prefix // lift every rule
	host         *hostAddrs
}

// forbidden says why the proxy must not dial a, or "" when it may. The
// reason never contains the address (it reaches the sandbox, and a
// resolved address would tell the code what internal names resolve to).
// In order:
//
//  1. an address in Config.AllowAddress may be dialed, whatever it is;
//  2. a cloud provider's service address (providerAddrs) is refused;
//  3. an address of the host itself is refused: one bound on the host's
//     interfaces now (but loopback, which rule 4 decides: allowing a
//     loopback range is allowing the host) or the unspecified address;
//  4. a non-public address (specialRanges) is refused unless a range of
//     Config.AllowPrivate holds it.
//
// So --egress-allow-private 10.0.0.0/8 opens the internal network, not
// the gateway host's own 10.x address nor a metadata service in it.
func (r *addressRules) forbidden(a netip.Addr) string {
	for _, pre := range r.allowAddress {
		if pre.Contains(a) {
			return ""
		}
	}
	if why, ok := providerAddrs[a.WithZone("")]; ok {
		return why
	}
	if a.IsUnspecified() {
		return "the gateway host itself"
	}
	if !a.IsLoopback() {
		own, err := r.host.contains(a)
		if err != nil {
			return "the gateway cannot tell its own addresses right now"
		}
		if own {
			return "an address of the gateway host itself"
		}
	}
	why := forbiddenReason(a)
	if why == "" {
		return ""
	}
	for _, pre := range r.allowPrivate {
		if pre.Contains(a) {
			return ""
		}
	}
	return why
}
