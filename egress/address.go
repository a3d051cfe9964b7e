package egress

import "net/netip"

// specialRange is an address block the proxy never dials unless the
// operator allows it (Config.AllowPrivate), with the reason given.
type specialRange struct {
	prefix netip.Prefix
	why    string
}

// specialRanges are the blocks that are not the public internet, or that
// embed an IPv4 address a gateway could route to an internal one. IPv6
// outside 2000::/3 is refused as a whole.
var specialRanges = func() []specialRange {
	list := []struct{ cidr, why string }{
		{"0.0.0.0/8", "unspecified or this-network"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (cloud metadata lives here)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.0.2.0/24", "documentation"},
		{"192.88.99.0/24", "6to4 relay anycast"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved or broadcast"},
		{"2001::/23", "IETF special purpose (Teredo, benchmarking, ORCHID)"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4 (embeds an IPv4 address)"},
		{"3fff::/20", "documentation"},
	}
	out := make([]specialRange, len(list))
	for i, r := range list {
		out[i] = specialRange{netip.MustParsePrefix(r.cidr), r.why}
	}
	return out
}()

// globalV6 is the IPv6 global unicast block; everything else in IPv6
// (loopback, unspecified, link-local, unique local, multicast, NAT64,
// IPv4-compatible and -mapped forms) is refused.
var globalV6 = netip.MustParsePrefix("2000::/3")

// forbiddenReason says why a is not a public destination, or returns ""
// when it is one. a must be unmapped (an IPv4-mapped IPv6 address is
// checked as the IPv4 address it carries).
func forbiddenReason(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	if a.Is6() && !globalV6.Contains(a) {
		switch {
		case a.IsLoopback():
			return "loopback"
		case a.IsLinkLocalUnicast():
			return "link-local"
		case a.IsPrivate():
			return "unique local (private)"
		case a.IsMulticast():
			return "multicast"
		}
		return "not global unicast IPv6"
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	return ""
}

// providerAddrs are the service addresses cloud providers give every
// virtual machine: metadata (credentials, user data), platform agents,
// DNS and time. The proxy never dials them unless the operator names them
// (Config.AllowAddress): allowing a private or link-local range
// (Config.AllowPrivate) does not open them. Some are public addresses
// (Azure's), outside every special range.
var providerAddrs = func() map[netip.Addr]string {
	list := []struct{ addr, why string }{
		// AWS, GCP, Azure, Oracle, OpenStack, DigitalOcean, Hetzner, ...
		{"169.254.169.254", "cloud metadata service"},
		{"169.254.170.2", "cloud metadata service (AWS ECS task credentials)"},
		{"169.254.169.253", "cloud provider DNS (AWS)"},
		{"169.254.169.123", "cloud provider time service (AWS)"},
		{"fd00:ec2::254", "cloud metadata service (AWS, IPv6)"},
		{"fd00:ec2::253", "cloud provider DNS (AWS, IPv6)"},
		{"fd00:ec2::123", "cloud provider time service (AWS, IPv6)"},
		{"fd20:ce::254", "cloud metadata service (GCP, IPv6)"},
		{"168.63.129.16", "cloud platform service (Azure WireServer, DNS, health probes)"},
		{"100.100.100.200", "cloud metadata service (Alibaba)"},
		{"192.0.0.192", "cloud metadata service (Oracle, legacy)"},
		{"169.254.0.23", "cloud metadata service (Tencent)"},
	}
	out := make(map[netip.Addr]string, len(list))
	for _, p := range list {
		out[netip.MustParseAddr(p.addr)] = p.why
	}
	return out
}()

// ProviderAddrs returns the cloud providers' service addresses the proxy
// refuses unless the operator names them (Config.AllowAddress), each with
// what it is: the documented list.
func ProviderAddrs() map[netip.Addr]string {
	out := make(map[netip.Addr]string, len(providerAddrs))
	for a, why := range providerAddrs {
		out[a] = why
	}
	return out
}
