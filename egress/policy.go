package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Limits on an allowlist.
const (
	// MaxPatterns bounds the patterns of one list.
	MaxPatterns = 64
	// maxPatternLen bounds one pattern (a 253-byte name, a port, brackets).
	maxPatternLen = 270
)

// Port values of a Pattern besides 1..65535.
const (
	// DefaultPorts stands for a pattern without a port: plain HTTP to 80
	// and 443, CONNECT to 443 only. A CONNECT is a raw tunnel: to port 80
	// it would carry plain HTTP with any Host header, to whatever else the
	// allowed name's front end (a CDN edge) serves. Plain HTTP through the
	// proxy has its Host pinned to the URL's.
	DefaultPorts = 0
	// AnyPort stands for every port: a pattern ending in ":*".
	AnyPort = -1
)

type hostKind uint8

const (
	hostExact      hostKind = iota // pypi.org
	hostSubdomains                 // *.pythonhosted.org: strict subdomains, any depth
	hostAny                        // *: every DNS name (never an IP literal)
	hostIP                         // 203.0.113.7 or [2001:db8::1]: that literal only
	hostCIDR                       // 203.0.113.0/24 or [2001:db8::/48]: an IP literal in it (in a deny list, also an address a name resolves to)
)

// Pattern is one entry of an allowlist: a host (an exact DNS name,
// "*.suffix" for every strict subdomain of suffix, "*" for every name, or
// an IP literal) and a port (DefaultPorts, AnyPort or one port). The zero
// Pattern matches nothing useful; build one with ParsePattern.
type Pattern struct {
	kind   hostKind
	name   string       // lower case, no trailing dot; the suffix for hostSubdomains
	ip     netip.Addr   // hostIP
	prefix netip.Prefix // hostCIDR, masked
	port   int
}

// ParsePattern parses "host", "host:port" or "host:*". host is a DNS name
// (letters, digits and hyphens; case and one trailing dot ignored),
// "*.name", "*", an IPv4 literal or a bracketed IPv6 literal. Without a
// port the pattern allows plain HTTP to 80 and 443 and CONNECT to 443
// (DefaultPorts); a port, even 80, allows both on that port.
func ParsePattern(s string) (Pattern, error) {
	bad := func(why string) (Pattern, error) {
		return Pattern{}, &PatternError{Pattern: s, Reason: why}
	}
	if s == "" || len(s) > maxPatternLen {
		return bad("empty or longer than " + strconv.Itoa(maxPatternLen) + " bytes")
	}
	host, port, err := splitPattern(s)
	if err != nil {
		return bad(err.Error())
	}
	p := Pattern{port: DefaultPorts}
	switch port {
	case "":
	case "*":
		p.port = AnyPort
	default:
		n, err := parsePort(port)
		if err != nil {
			return bad(err.Error())
		}
		p.port = n
	}
	switch {
	case host == "*":
		p.kind = hostAny
	case strings.HasPrefix(host, "*."):
		name, err := canonicalName(host[2:])
		if err != nil {
			return bad(err.Error())
		}
		p.kind, p.name = hostSubdomains, name
	case strings.Contains(host, "*"):
		return bad(`a wildcard must be the whole first label ("*.example.com") or the whole host ("*")`)
	case strings.Contains(host, "/"):
		pre, err := netip.ParsePrefix(host)
		if err != nil || pre.Addr().Zone() != "" {
			return bad("not a CIDR block (203.0.113.0/24, [2001:db8::/48])")
		}
		if pre.Addr().Is4In6() {
			return bad("an IPv4 block is written as IPv4 (203.0.113.0/24)")
		}
		if pre.Bits() < minPrefixBits(pre.Addr()) {
			return bad(fmt.Sprintf("a block wider than /%d: name the hosts, or ask for smaller blocks", minPrefixBits(pre.Addr())))
		}
		p.kind, p.prefix = hostCIDR, pre.Masked()
	default:
		if ip, err := netip.ParseAddr(host); err == nil {
			if ip.Zone() != "" {
				return bad("an IPv6 zone is not allowed")
			}
			p.kind, p.ip = hostIP, ip.Unmap()
			break
		}
		name, err := canonicalName(host)
		if err != nil {
			return bad(err.Error())
		}
		p.kind, p.name = hostExact, name
	}
	return p, nil
}

// splitPattern splits host and port ("" when absent). An IPv6 literal must
// be bracketed.
func splitPattern(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("missing ]")
		}
		host, rest := s[1:end], s[end+1:]
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			if pre, perr := netip.ParsePrefix(host); perr != nil || !pre.Addr().Is6() {
				return "", "", fmt.Errorf("brackets hold an IPv6 address or block only")
			}
		}
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") || len(rest) == 1 {
			return "", "", fmt.Errorf("after ] comes :port or nothing")
		}
		return host, rest[1:], nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		host, port, _ := strings.Cut(s, ":")
		if host == "" || port == "" {
			return "", "", fmt.Errorf("empty host or port")
		}
		return host, port, nil
	}
	return "", "", fmt.Errorf("an IPv6 address must be in brackets: [2001:db8::1]:443")
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s[0] == '0' || s[0] == '+' {
		return 0, fmt.Errorf("port %q: want 1..65535 or *", s)
	}
	return n, nil
}

// canonicalName checks a DNS host name and returns it in lower case
// without a trailing dot: labels of 1..63 letters, digits and hyphens (not
// at either end), 253 bytes at most, and a last label that is not all
// digits (such names are read as IPv4 numbers by some resolvers).
func canonicalName(s string) (string, error) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", fmt.Errorf("host name empty or longer than 253 bytes")
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("host name %q: empty label or label over 63 bytes", s)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("host name %q: a label starts or ends with -", s)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return "", fmt.Errorf("host name %q: only letters, digits, hyphens and dots", s)
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" {
		return "", fmt.Errorf("host %q looks like a number, not a name", s)
	}
	return s, nil
}

// String returns the pattern in its canonical form.
func (p Pattern) String() string {
	var host string
	switch p.kind {
	case hostExact:
		host = p.name
	case hostSubdomains:
		host = "*." + p.name
	case hostAny:
		host = "*"
	case hostIP:
		host = p.ip.String()
		if p.ip.Is6() {
			host = "[" + host + "]"
		}
	case hostCIDR:
		host = p.prefix.String()
		if p.prefix.Addr().Is6() {
			host = "[" + host + "]"
		}
	}
	switch p.port {
	case DefaultPorts:
		return host
	case AnyPort:
		return host + ":*"
	}
	return host + ":" + strconv.Itoa(p.port)
}

// matchesHost reports whether the pattern's host part matches a request
// for name (a canonical DNS name, "" for an IP literal) or ip.
func (p Pattern) matchesHost(name string, ip netip.Addr) bool {
	switch p.kind {
	case hostExact:
		return name != "" && name == p.name
	case hostSubdomains:
		return name != "" && strings.HasSuffix(name, "."+p.name)
	case hostAny:
		return name != ""
	case hostIP:
		return name == "" && ip == p.ip
	case hostCIDR:
		return name == "" && ip.IsValid() && p.prefix.Contains(ip)
	}
	return false
}

// minPrefixBits is the widest block a pattern may name: a /8 of IPv4, a
// /16 of IPv6. Wider ones are all but "everything", which a list of
// destinations is not for.
func minPrefixBits(a netip.Addr) int {
	if a.Is4() {
		return 8
	}
	return 16
}

// matchesAddr reports whether the pattern is a block holding a, an
// address a name resolved to (for deny lists: an allowed name never
// reaches an address a block denies).
func (p Pattern) matchesAddr(a netip.Addr) bool {
	return p.kind == hostCIDR && p.prefix.Contains(a)
}

// matchesPort reports whether the pattern allows port, for a CONNECT
// tunnel (connect) or a plain HTTP request.
func (p Pattern) matchesPort(port int, connect bool) bool {
	switch p.port {
	case AnyPort:
		return true
	case DefaultPorts:
		return port == 443 || port == 80 && !connect
	}
	return port == p.port
}

// coversHosts reports whether every host q matches is matched by p.
func (p Pattern) coversHosts(q Pattern) bool {
	switch q.kind {
	case hostIP:
		return p.kind == hostIP && p.ip == q.ip || p.kind == hostCIDR && p.prefix.Contains(q.ip)
	case hostCIDR:
		return p.kind == hostCIDR && p.prefix.Bits() <= q.prefix.Bits() && p.prefix.Contains(q.prefix.Addr())
	case hostExact:
		return p.matchesHost(q.name, netip.Addr{})
	case hostSubdomains:
		return p.kind == hostAny || p.kind == hostSubdomains && (q.name == p.name || strings.HasSuffix(q.name, "."+p.name))
	case hostAny:
		return p.kind == hostAny
	}
	return false
}

// Policy is a parsed allowlist, with the destinations it denies even
// when they are allowed (WithDeny). The zero Policy allows nothing. It is
// immutable and safe for concurrent use.
type Policy struct {
	patterns []Pattern
	deny     []Pattern
}

// WithDeny returns the policy that refuses, before anything the list
// allows, every destination one of deny's patterns matches (names,
// literals, and for blocks and literals the addresses a name resolves
// to), at most MaxPatterns. A deny list needs no ceiling: it only takes
// away.
func (pol Policy) WithDeny(deny []string) (Policy, error) {
	d, err := ParsePolicy(deny)
	if err != nil {
		var pe *PatternError
		if errors.As(err, &pe) {
			pe.List = "network.deny"
		}
		return Policy{}, err
	}
	pol.deny = d.patterns
	return pol, nil
}

// DenyStrings returns the deny patterns in canonical form.
func (pol Policy) DenyStrings() []string {
	out := make([]string, len(pol.deny))
	for i, p := range pol.deny {
		out[i] = p.String()
	}
	return out
}

// denies reports whether a deny pattern matches the destination: name
// (or ip, a literal) on port, or addr, an address it resolved to (the
// zero Addr when there is none yet).
func (pol Policy) denies(name string, ip, addr netip.Addr, port int) bool {
	for _, p := range pol.deny {
		if p.port > 0 && p.port != port { // a deny pattern without a port denies every port
			continue
		}
		if p.matchesHost(name, ip) || addr.IsValid() && (p.matchesAddr(addr) || p.kind == hostIP && p.ip == addr) {
			return true
		}
	}
	return false
}

// ParsePolicy parses an allowlist of at most MaxPatterns patterns
// (ParsePattern); duplicates are dropped. The error is a *PatternError
// naming the first bad pattern.
func ParsePolicy(list []string) (Policy, error) {
	if len(list) > MaxPatterns {
		return Policy{}, &PatternError{Reason: fmt.Sprintf("more than %d patterns", MaxPatterns)}
	}
	var pol Policy
	seen := map[string]bool{}
	for _, s := range list {
		p, err := ParsePattern(s)
		if err != nil {
			return Policy{}, err
		}
		if k := p.String(); !seen[k] {
			seen[k] = true
			pol.patterns = append(pol.patterns, p)
		}
	}
	return pol, nil
}

// Empty reports whether the policy allows nothing.
func (pol Policy) Empty() bool { return len(pol.patterns) == 0 }

// Strings returns the patterns in canonical form.
func (pol Policy) Strings() []string {
	out := make([]string, len(pol.patterns))
	for i, p := range pol.patterns {
		out[i] = p.String()
	}
	return out
}

// verdict is what a policy says about one destination.
type verdict uint8

const (
	verdictAllowed     verdict = iota
	verdictHost                // no pattern matches the host
	verdictPort                // a pattern matches the host, none with this port
	verdictConnectPort         // as verdictPort, but plain HTTP to this port would be allowed
)

// check looks up a destination: name (canonical; "" for an IP literal) or
// ip, and port, for a CONNECT tunnel (connect) or a plain HTTP request.
func (pol Policy) check(name string, ip netip.Addr, port int, connect bool) verdict {
	v := verdictHost
	for _, p := range pol.patterns {
		if !p.matchesHost(name, ip) {
			continue
		}
		if p.matchesPort(port, connect) {
			return verdictAllowed
		}
		if connect && p.matchesPort(port, false) {
			v = verdictConnectPort
		} else if v == verdictHost {
			v = verdictPort
		}
	}
	return v
}

// Allows reports whether the policy lets a request with method (CONNECT,
// or that of a plain HTTP request) to host:port through, before the
// address checks. host is a name or an IP literal, as a client would send
// it.
func (pol Policy) Allows(method, host string, port int) bool {
	name, ip, err := parseHost(host)
	return err == nil && pol.check(name, ip, port, method == "CONNECT") == verdictAllowed
}

// Within returns nil when every destination pol allows is allowed by
// ceiling too, else a *PatternError naming the first pattern of pol that
// goes beyond it. A pattern is within the ceiling when, among the ceiling
// patterns that match every host it matches, the union of the ports
// covers its ports, for plain HTTP and for CONNECT: "pypi.org:80" (CONNECT
// to 80 too) is not within "pypi.org" (CONNECT to 443 only).
func (pol Policy) Within(ceiling Policy) error {
	for _, q := range pol.patterns {
		var anyPort bool
		plain, tunnel := map[int]bool{}, map[int]bool{}
		for _, c := range ceiling.patterns {
			if !c.coversHosts(q) {
				continue
			}
			switch c.port {
			case AnyPort:
				anyPort = true
			case DefaultPorts:
				plain[80], plain[443], tunnel[443] = true, true, true
			default:
				plain[c.port], tunnel[c.port] = true, true
			}
		}
		ok := anyPort
		switch {
		case ok:
		case q.port == AnyPort:
		case q.port == DefaultPorts:
			ok = plain[80] && plain[443] && tunnel[443]
		default:
			ok = plain[q.port] && tunnel[q.port]
		}
		if !ok {
			why := "not within the destinations this gateway lets sessions ask for"
			if ceiling.Empty() {
				why = "this gateway lets sessions ask for no network access"
			}
			return &PatternError{Pattern: q.String(), Reason: why}
		}
	}
	return nil
}

// parseHost reads the host of a request: an IP literal (IPv6 with or
// without brackets) or a DNS name, which it returns canonical.
func parseHost(host string) (name string, ip netip.Addr, err error) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, perr := netip.ParseAddr(h); perr == nil {
		if a.Zone() != "" {
			return "", netip.Addr{}, fmt.Errorf("an IPv6 zone is not allowed")
		}
		return "", a.Unmap(), nil
	}
	name, err = canonicalName(host)
	return name, netip.Addr{}, err
}
