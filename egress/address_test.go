package egress

import (
	"errors"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassroom/glassroom/egress/egresstest"
	"github.com/rs/zerolog"
)

func prefixes(list ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range list {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func addrs(list ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// TestAddressRules: the host's own addresses and the providers' service
// addresses are refused even in a range the operator opened with
// AllowPrivate; only AllowAddress opens them. Decisions only: nothing is
// dialed.
func TestAddressRules(t *testing.T) {
	host := &hostAddrs{list: func() ([]netip.Addr, error) {
		return addrs("127.0.0.1", "::1", "203.0.113.5", "10.1.2.3", "fe80::1", "2001:db8::5"), nil
	}, ttl: time.Hour, log: zerolog.Nop()}
	r := &addressRules{
		allowPrivate: prefixes("10.0.0.0/8", "203.0.113.0/24", "169.254.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "fe80::/10", "fd00::/8", "2001:db8::/32"),
		host:         host,
	}
	cases := map[string]string{
		"10.9.9.9":        "",                                      // the operator's range
		"127.0.0.1":       "",                                      // loopback is AllowPrivate's to open
		"10.1.2.3":        "an address of the gateway host itself", // in the operator's range, but the host's
		"203.0.113.5":     "an address of the gateway host itself",
		"203.0.113.6":     "",
		"fe80::1":         "an address of the gateway host itself",
		"2001:db8::5":     "an address of the gateway host itself",
		"0.0.0.0":         "the gateway host itself",
		"::":              "the gateway host itself",
		"169.254.169.254": "cloud metadata service",
		"169.254.170.2":   "cloud metadata service (AWS ECS task credentials)",
		"168.63.129.16":   "cloud platform service (Azure WireServer, DNS, health probes)", // a public address
		"100.100.100.200": "cloud metadata service (Alibaba)",
		"192.0.0.192":     "cloud metadata service (Oracle, legacy)",
		"fd00:ec2::254":   "cloud metadata service (AWS, IPv6)",
		"fd20:ce::254":    "cloud metadata service (GCP, IPv6)",
		"192.168.1.1":     "private", // not in the operator's ranges
	}
	for s, want := range cases {
		if got := r.forbidden(netip.MustParseAddr(s)); got != want {
			t.Errorf("forbidden(%s) = %q, want %q", s, got, want)
		}
	}
	// AllowAddress opens an address whatever it is.
	r.allowAddress = prefixes("203.0.113.5/32", "168.63.129.16/32", "169.254.169.254/32", "192.168.1.1/32")
	for _, s := range []string{"203.0.113.5", "168.63.129.16", "169.254.169.254", "192.168.1.1"} {
		if why := r.forbidden(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s in AllowAddress: %q", s, why)
		}
	}
	if why := r.forbidden(netip.MustParseAddr("10.1.2.3")); why == "" {
		t.Error("AllowAddress of other addresses opened the host's 10.1.2.3")
	}
	for a, why := range ProviderAddrs() {
		if why == "" || a.Zone() != "" {
			t.Errorf("provider address %s: %q", a, why)
		}
	}
}

// TestHostAddrsKeptCurrent: the host's addresses are read again once
// older than the TTL, not before; an address the host gains is refused
// from then on. When they cannot be read, the last ones read are used,
// and with none every address is refused.
func TestHostAddrsKeptCurrent(t *testing.T) {
	var mu sync.Mutex
	current, reads := addrs("198.51.100.7"), 0
	var fail error
	list := func() ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return current, fail
	}
	set := func(a []netip.Addr, err error) { mu.Lock(); current, fail = a, err; mu.Unlock() }
	a, b := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("198.51.100.8")

	cached := &hostAddrs{list: list, ttl: time.Hour, log: zerolog.Nop()}
	for i := 0; i < 3; i++ {
		if own, err := cached.contains(a); !own || err != nil {
			t.Fatalf("contains(%s) = %v %v", a, own, err)
		}
	}
	if reads != 1 {
		t.Errorf("%d reads within the TTL, want 1", reads)
	}
	set(addrs("198.51.100.8"), nil)
	if own, _ := cached.contains(b); own {
		t.Error("a new address was seen within the TTL: no cache")
	}

	set(addrs("198.51.100.7"), nil)
	fresh := &hostAddrs{list: list, ttl: time.Nanosecond, log: zerolog.Nop()}
	if own, _ := fresh.contains(b); own {
		t.Fatal("an address the host does not have")
	}
	set(addrs("198.51.100.8"), nil) // the host gains b
	if own, _ := fresh.contains(b); !own {
		t.Error("the host's new address is not refused once the TTL is past")
	}
	set(nil, errors.New("netlink: no"))
	if own, err := fresh.contains(b); !own || err != nil {
		t.Errorf("a failed read must keep the last addresses: %v %v", own, err)
	}
	broken := &hostAddrs{list: list, ttl: time.Nanosecond, log: zerolog.Nop()}
	r := &addressRules{host: broken}
	if _, err := broken.contains(b); !errors.Is(err, errHostAddrs) {
		t.Errorf("no address ever read: %v", err)
	}
	if why := r.forbidden(netip.MustParseAddr("8.8.8.8")); why == "" {
		t.Error("with the host's addresses unknown, a public address must be refused")
	}
}

// TestCheckRefusesHostAddressBeforeDialing: the proxy's decision for a
// name resolving to an address of the host is a refusal, before any dial,
// even though the operator opened the range (AllowPrivate); it does not
// name the address.
func TestCheckRefusesHostAddressBeforeDialing(t *testing.T) {
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	svc, err := NewService(Config{
		Dir: filepath.Join(dir, "egress"), Allow: []string{"*.test"},
		AllowPrivate: prefixes("203.0.113.0/24"),
		HostAddrs:    func() ([]netip.Addr, error) { return addrs("203.0.113.5"), nil },
		Resolver:     egresstest.NewResolver(map[string]string{"self.test": "203.0.113.5", "azure.test": "168.63.129.16", "peer.test": "203.0.113.6"}),
	}, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := svc.Admit([]string{"*.test"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Start("0123456789abcdef", pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for name, why := range map[string]string{"self.test": "an address of the gateway host itself", "azure.test": "Azure WireServer"} {
		got, no := p.check(name, 443, true)
		if got != nil || no.status != http.StatusForbidden || !strings.Contains(no.reason, why) || no.addr != netip.MustParseAddr(map[string]string{"self.test": "203.0.113.5", "azure.test": "168.63.129.16"}[name]) {
			t.Errorf("%s: %v %+v", name, got, no)
		}
		if strings.Contains(no.reason, "203.0.113") || strings.Contains(no.reason, "168.63") {
			t.Errorf("%s: the reason names the address: %q", name, no.reason)
		}
	}
	if got, no := p.check("peer.test", 443, true); len(got) != 1 || no.status != 0 {
		t.Errorf("another address of the operator's range: %v %+v", got, no)
	}
}
