package k8s

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// agentServerName is the name in every agent's certificate and the one the
// gateway verifies: each session's certificate is its own self-signed one,
// pinned by the gateway (the only root it trusts for that pod), so the
// name says nothing a pod could forge.
const agentServerName = "glassroom-agent"

// NewAgentCert returns a new self-signed ECDSA P-256 certificate and key
// (PEM) for one session's pod agent, valid from an hour ago for validFor.
func NewAgentCert(sessionID string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("k8s: agent certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("k8s: agent certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: agentServerName, OrganizationalUnit: []string{sessionID}},
		DNSNames:              []string{agentServerName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("k8s: agent certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("k8s: agent certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// AgentClientTLS returns the gateway's TLS configuration for one pod's
// agent: TLS 1.3, and only that session's certificate is trusted.
func AgentClientTLS(certPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("k8s: agent certificate: no certificate in the session's secret")
	}
	return &tls.Config{RootCAs: pool, ServerName: agentServerName, MinVersion: tls.VersionTLS13}, nil
}

// AgentServerTLS returns the pod agent's TLS configuration from its
// certificate and key (PEM, the Secret's items).
func AgentServerTLS(certPEM, keyPEM []byte) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("k8s: agent certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}, nil
}
