// Package egresstest holds what tests of the egress proxy share: a
// resolver that answers from a table (no query ever leaves the machine)
// and a certificate for TLS upstreams with test names. It is a test
// helper: only _test.go files import it.
package egresstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resolver answers from Hosts, and every other name under ".test" with
// 127.0.0.1; anything else is "not found". It never sends a query. It is
// safe for concurrent use.
type Resolver struct {
	Hosts map[string][]netip.Addr

	mu      sync.Mutex
	lookups map[string]int
	held    map[string]*hold
}

// hold is a name whose lookups wait: reached closes at the first, and
// they answer once release closes (or their context ends).
type hold struct {
	reached, release chan struct{}
	once             sync.Once
}

// NewResolver returns a resolver with the given extra names
// ("internal.test" → "10.0.0.1", ...).
func NewResolver(hosts map[string]string) *Resolver {
	r := &Resolver{Hosts: map[string][]netip.Addr{}, lookups: map[string]int{}}
	for name, addr := range hosts {
		for _, a := range strings.Split(addr, ",") {
			r.Hosts[name] = append(r.Hosts[name], netip.MustParseAddr(a))
		}
	}
	return r
}

// Set makes name resolve to addrs (comma-separated), from now on.
func (r *Resolver) Set(name, addrs string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Hosts[name] = nil
	for _, a := range strings.Split(addrs, ",") {
		r.Hosts[name] = append(r.Hosts[name], netip.MustParseAddr(a))
	}
}

// Hold makes lookups of name wait until release is called; reached
// closes when the first one begins. For tests of what changes while a
// connection is resolving.
func (r *Resolver) Hold(name string) (reached <-chan struct{}, release func()) {
	h := &hold{reached: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	if r.held == nil {
		r.held = map[string]*hold{}
	}
	r.held[name] = h
	r.mu.Unlock()
	var once sync.Once
	return h.reached, func() { once.Do(func() { close(h.release) }) }
}

// LookupNetIP implements egress.Resolver.
func (r *Resolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	h := r.held[host]
	r.mu.Unlock()
	if h != nil {
		h.once.Do(func() { close(h.reached) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookups == nil {
		r.lookups = map[string]int{}
	}
	r.lookups[host]++
	if a, ok := r.Hosts[host]; ok {
		return a, nil
	}
	if strings.HasSuffix(host, ".test") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

// Lookups returns how many times name was looked up.
func (r *Resolver) Lookups(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[name]
}

// Dial connects to the unix socket at path through a descriptor of its
// directory, so the path may be longer than a socket address allows (a
// proxy's directory under a test's temporary directory often is).
func Dial(ctx context.Context, path string) (net.Conn, error) {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	var d net.Dialer
	return d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(int(dir.Fd()))+"/"+filepath.Base(path))
}

// Certificate returns a certificate for names, signed by a fresh CA, and
// that CA's certificate in PEM (for a client's trust store).
func Certificate(names ...string) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "glassroom egress test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("egresstest: leaf: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
