package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	good := map[string]string{
		"pypi.org":              "pypi.org",
		"PyPI.org.":             "pypi.org",
		"*.pythonhosted.org":    "*.pythonhosted.org",
		"api.example.com:443":   "api.example.com:443",
		"api.example.com:*":     "api.example.com:*",
		"*":                     "*",
		"*:8080":                "*:8080",
		"203.0.113.7":           "203.0.113.7",
		"203.0.113.7:5432":      "203.0.113.7:5432",
		"[2001:db8::1]":         "[2001:db8::1]",
		"[2001:db8::1]:443":     "[2001:db8::1]:443",
		"[::ffff:10.0.0.1]:80":  "10.0.0.1:80",
		"xn--bcher-kva.example": "xn--bcher-kva.example",
		"a-b.c9":                "a-b.c9",
	}
	for in, want := range good {
		p, err := ParsePattern(in)
		if err != nil {
			t.Errorf("ParsePattern(%q): %v", in, err)
			continue
		}
		if p.String() != want {
			t.Errorf("ParsePattern(%q) = %q, want %q", in, p.String(), want)
		}
	}
	bad := []string{
		"", "pypi.org:", ":443", "pypi.org:0", "pypi.org:65536", "pypi.org:+1", "pypi.org:08", "pypi.org:http",
		"*pypi.org", "py*.org", "a.*.org", "*.", "*.*.org", "2001:db8::1", "[2001:db8::1", "[pypi.org]:443",
		"[2001:db8::1]443", "fe80::1%eth0", "[fe80::1%eth0]", "exa mple.com", "-a.com", "a-.com", "a..com",
		"under_score.com", "127.1", "2130706433", "0x7f.1", "ex\x00ample.com", "é.com",
		strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 130) + "com",
	}
	for _, in := range bad {
		if p, err := ParsePattern(in); err == nil {
			t.Errorf("ParsePattern(%q) = %q, want an error", in, p.String())
		} else if !errors.Is(err, ErrPolicy) {
			t.Errorf("ParsePattern(%q): error %v is not ErrPolicy", in, err)
		}
	}
}

func TestPolicyAllows(t *testing.T) {
	pol, err := ParsePolicy([]string{"pypi.org", "*.pythonhosted.org", "api.example.com:8443", "203.0.113.7:5432", "[2001:db8::1]:*"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host string
		port int
		want bool
	}{
		{"pypi.org", 443, true},
		{"PYPI.ORG.", 80, true},
		{"pypi.org", 8080, false}, // no port: 80 and 443 only (CONNECT: below)
		{"www.pypi.org", 443, false},
		{"files.pythonhosted.org", 443, true},
		{"a.b.pythonhosted.org", 443, true},
		{"pythonhosted.org", 443, false}, // *.x matches strict subdomains only
		{"evilpythonhosted.org", 443, false},
		{"api.example.com", 8443, true},
		{"api.example.com", 443, false},
		{"203.0.113.7", 5432, true},
		{"203.0.113.7", 443, false},
		{"::ffff:203.0.113.7", 5432, true},
		{"[2001:db8::1]", 1, true},
		{"2001:db8::1", 65535, true},
		{"203.0.113.8", 5432, false},
		{"127.0.0.1", 443, false},
		{"2130706433", 80, false},
		{"", 443, false},
	}
	for _, c := range cases {
		if got := pol.Allows("GET", c.host, c.port); got != c.want {
			t.Errorf("Allows(GET, %q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	// "*" matches every name, never an IP literal.
	every, _ := ParsePolicy([]string{"*:*"})
	if !every.Allows("GET", "anything.example", 1234) || every.Allows("GET", "203.0.113.7", 80) {
		t.Error(`"*:*" must match names only`)
	}
}

// TestConnectGoesTo443: a pattern without a port lets CONNECT through to
// 443 only (a tunnel to 80 would be raw HTTP with any Host header); a
// pattern naming a port, 80 included, allows CONNECT there.
func TestConnectGoesTo443(t *testing.T) {
	pol, err := ParsePolicy([]string{"pypi.org", "*.cdn.example", "plain.example:80", "any.example:*"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, host string
		port         int
		want         bool
	}{
		{"CONNECT", "pypi.org", 443, true},
		{"CONNECT", "pypi.org", 80, false},
		{"GET", "pypi.org", 80, true},
		{"GET", "pypi.org", 443, true},
		{"CONNECT", "a.cdn.example", 80, false},
		{"CONNECT", "a.cdn.example", 443, true},
		{"CONNECT", "plain.example", 80, true},
		{"CONNECT", "plain.example", 443, false},
		{"CONNECT", "any.example", 80, true},
	}
	for _, c := range cases {
		if got := pol.Allows(c.method, c.host, c.port); got != c.want {
			t.Errorf("Allows(%s, %q, %d) = %v, want %v", c.method, c.host, c.port, got, c.want)
		}
	}
	if v := pol.check("pypi.org", netip.Addr{}, 80, true); v != verdictConnectPort {
		t.Errorf("CONNECT pypi.org:80: verdict %d, want verdictConnectPort", v)
	}
	if v := pol.check("pypi.org", netip.Addr{}, 8080, true); v != verdictPort {
		t.Errorf("CONNECT pypi.org:8080: verdict %d, want verdictPort", v)
	}
}

func TestPolicyWithinCeiling(t *testing.T) {
	ceiling, err := ParsePolicy([]string{"pypi.org", "*.pythonhosted.org", "*.example.com:*", "api.other.com:443", "api.other.com:80", "203.0.113.7:5432", "*.wide.org:8443"})
	if err != nil {
		t.Fatal(err)
	}
	within := []string{
		"pypi.org", "pypi.org:443", "files.pythonhosted.org", "*.pythonhosted.org", "*.a.pythonhosted.org:443",
		"x.example.com:9999", "*.example.com", "*.example.com:*", "*.b.example.com:1",
		"api.other.com", // 80 and 443, from two ceiling patterns
		"203.0.113.7:5432", "*.wide.org:8443", "x.wide.org:8443",
	}
	for _, s := range within {
		pol, err := ParsePolicy([]string{s})
		if err != nil {
			t.Fatal(err)
		}
		if err := pol.Within(ceiling); err != nil {
			t.Errorf("%q must be within the ceiling: %v", s, err)
		}
	}
	beyond := []string{
		"pypi.org:80", // CONNECT to 80, which "pypi.org" does not allow
		"*.pythonhosted.org:80",
		"pypi.org:8080", "pypi.org:*", "www.pypi.org", "*.pypi.org", "pythonhosted.org", "*.pythonhosted.org:8080",
		"example.com", "*", "*:443", "api.other.com:*", "api.other.com:8443", "203.0.113.7", "203.0.113.7:5433",
		"203.0.113.8:5432", "*.wide.org", "evil.com",
	}
	for _, s := range beyond {
		pol, err := ParsePolicy([]string{"pypi.org", s})
		if err != nil {
			t.Fatal(err)
		}
		err = pol.Within(ceiling)
		var pe *PatternError
		if !errors.As(err, &pe) {
			t.Errorf("%q must be beyond the ceiling, got %v", s, err)
			continue
		}
		if canon, _ := ParsePattern(s); pe.Pattern != canon.String() || !strings.Contains(pe.Public(), canon.String()) {
			t.Errorf("the error must name %q: %q", s, pe.Public())
		}
	}
	// An empty ceiling lets a session ask for nothing, and says so.
	pol, _ := ParsePolicy([]string{"pypi.org"})
	if err := pol.Within(Policy{}); err == nil || !strings.Contains(err.Error(), "no network") {
		t.Errorf("an empty ceiling must refuse with a clear reason: %v", err)
	}
	// "*" and "*:*" cover every name, but never an IP literal.
	star, _ := ParsePolicy([]string{"*:*"})
	for _, s := range []string{"a.b.c", "*.x.org:1", "*"} {
		if p, _ := ParsePolicy([]string{s}); p.Within(star) != nil {
			t.Errorf("%q must be within *:*", s)
		}
	}
	if p, _ := ParsePolicy([]string{"203.0.113.7:80"}); p.Within(star) == nil {
		t.Error("an IP literal must need an IP pattern in the ceiling")
	}
}

func TestParsePolicyBounds(t *testing.T) {
	many := make([]string, MaxPatterns+1)
	for i := range many {
		many[i] = "a.com"
	}
	if _, err := ParsePolicy(many); err == nil {
		t.Error("more than MaxPatterns patterns must be refused")
	}
	pol, err := ParsePolicy([]string{"a.com", "A.com.", "a.com"})
	if err != nil || len(pol.Strings()) != 1 {
		t.Errorf("duplicates must collapse: %v %v", pol.Strings(), err)
	}
}

func TestForbiddenAddresses(t *testing.T) {
	forbidden := []string{
		"0.0.0.0", "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.255.255",
		"169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.170", "192.0.2.1", "192.88.99.1", "192.168.1.1",
		"198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "64:ff9b::a00:1", "64:ff9b:1::1", "::a00:1",
		"100::1", "2001::1", "2001:db8::1", "2002:a00:1::1", "3fff::1", "fec0::1",
	}
	for _, s := range forbidden {
		a := netip.MustParseAddr(s).Unmap()
		if forbiddenReason(a) == "" {
			t.Errorf("%s must be forbidden", s)
		}
	}
	if forbiddenReason(netip.MustParseAddr("::ffff:10.0.0.1").Unmap()) == "" {
		t.Error("an IPv4-mapped private address must be forbidden")
	}
	// Classification only: nothing is dialed.
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "151.101.0.223", "100.128.0.1", "172.32.0.1", "2606:4700:4700::1111", "2a04:4e42::223"} {
		if why := forbiddenReason(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s is public, got %q", s, why)
		}
	}
}
