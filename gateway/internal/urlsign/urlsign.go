// Package urlsign seals and opens the tokens of signed URLs: expiring,
// single-purpose, path-bound grants that a browser or a bare HTTP client
// uses without the API key.
//
// A token is base64url(nonce || AES-256-GCM(claims)), under a key drawn
// from the gateway's signing key. It is opaque (a holder reads neither
// the tenant nor the session in it) and authenticated (a changed byte is
// refused). The signing key is a random secret of its own, never derived
// from the API keys: a token then gives nothing to test guesses of a key
// against. Replicas that share the signing key honour each other's
// tokens. A Signer is immutable and safe for concurrent use.
package urlsign

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Operations a token grants.
const (
	Read  = "read"
	Write = "write"
	// Preview grants a browser the previews of a session's port (Path
	// holds the port).
	Preview = "preview"
	// Access grants what runs inside a session (its code, files and
	// commands) for as long as it lives: AccessToken's (Expires 0).
	Access = "access"
	// Traffic grants the previews of every port of a session whose
	// previews are private, for as long as it lives: TrafficToken's
	// (Expires 0; E2B's traffic access token).
	Traffic = "traffic"
)

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 32

// MaxTokenBytes bounds a token's text: a longer one is refused unread.
const MaxTokenBytes = 8 << 10

var (
	// ErrBadToken is a malformed token, or one not sealed with this key.
	ErrBadToken = errors.New("urlsign: invalid signature")
	// ErrExpired is a token sealed correctly whose time is past.
	ErrExpired = errors.New("urlsign: signature is already expired")
)

// Claims are what a token grants: Op on Path of session Session (of
// Tenant) until Expires.
type Claims struct {
	Session string `json:"s"`
	Tenant  string `json:"t"`
	Path    string `json:"p"`
	Op      string `json:"o"`
	Expires int64  `json:"e"` // Unix seconds
}

// Signer seals and opens tokens with one key.
type Signer struct {
	aead     cipher.AEAD
	hostKey  []byte // HostTag's MAC key
	nonceKey []byte // AccessToken's nonces' MAC key
}

// New returns a signer with key (at least MinKeyBytes of secret).
func New(key []byte) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("urlsign: the signing key must be at least %d bytes", MinKeyBytes)
	}
	// The cipher's key is the signing key's HMAC over a label, so that a
	// key of any length (and one also used elsewhere) gives a 256-bit key
	// of its own.
	m := hmac.New(sha256.New, key)
	m.Write([]byte("glassroom signed URLs v2"))
	block, err := aes.NewCipher(m.Sum(nil))
	hk := hmac.New(sha256.New, key)
	hk.Write([]byte("glassroom preview hosts v1"))
	nk := hmac.New(sha256.New, key)
	nk.Write([]byte("glassroom access tokens v1"))
	if err != nil {
		return nil, fmt.Errorf("urlsign: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("urlsign: %w", err)
	}
	return &Signer{aead: aead, hostKey: hk.Sum(nil), nonceKey: nk.Sum(nil)}, nil
}

// NewKey returns a fresh random signing key.
func NewKey() []byte {
	k := make([]byte, MinKeyBytes)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24)
	return k
}

// Sign returns the sealed token of c.
func (s *Signer) Sign(c Claims) string {
	body, _ := json.Marshal(c) // plain strings and an int: cannot fail
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(body)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, body, nil))
}

// AccessToken is the sealed Access grant of a session of tenant: the
// same token each time it is asked for, on every replica (its nonce is a
// MAC of its claims, so that equal claims, and only they, share one), so
// that a client that connects again gets the token it had. It has no
// expiry of its own: it ends with its session.
func (s *Signer) AccessToken(tenant, session string) string {
	return s.sessionToken(Claims{Session: session, Tenant: tenant, Op: Access})
}

// TrafficToken is the sealed Traffic grant of a session of tenant, the
// same on every replica as AccessToken is; it ends with its session.
func (s *Signer) TrafficToken(tenant, session string) string {
	return s.sessionToken(Claims{Session: session, Tenant: tenant, Op: Traffic})
}

// sessionToken seals c with a nonce that is a MAC of it: equal claims,
// and only they, share one token.
func (s *Signer) sessionToken(c Claims) string {
	body, _ := json.Marshal(c)
	m := hmac.New(sha256.New, s.nonceKey)
	m.Write(body)
	nonce := m.Sum(nil)[:s.aead.NonceSize()]
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, body, nil))
}

// HostTagLen is the length of a HostTag.
const HostTagLen = 16

// HostTag is the grant a preview host name carries for the ports of
// session ({port}-{session}-{tag}): 80 bits of MAC, in lower-case base32
// (a DNS label's letters), the same on every replica. It has no expiry
// of its own: it ends with its session.
func (s *Signer) HostTag(session string) string {
	m := hmac.New(sha256.New, s.hostKey)
	m.Write([]byte(session))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(m.Sum(nil)[:10]))
}

// CheckHostTag reports whether tag is HostTag(session), in constant
// time.
func (s *Signer) CheckHostTag(tag, session string) bool {
	return hmac.Equal([]byte(tag), []byte(s.HostTag(session)))
}

// Verify returns the claims of token if it was sealed with this key and
// has not expired at now: ErrBadToken or ErrExpired otherwise.
func (s *Signer) Verify(token string, now time.Time) (Claims, error) {
	if len(token) > MaxTokenBytes {
		return Claims{}, ErrBadToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	ns := s.aead.NonceSize()
	if err != nil || len(raw) < ns+s.aead.Overhead() {
		return Claims{}, ErrBadToken
	}
	body, err := s.aead.Open(nil, raw[:ns], raw[ns:], nil)
	if err != nil {
		return Claims{}, ErrBadToken
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil || c.Session == "" || (c.Op != Read && c.Op != Write && c.Op != Preview && c.Op != Access && c.Op != Traffic) {
		return Claims{}, ErrBadToken
	}
	if (c.Op == Access || c.Op == Traffic) && c.Expires == 0 { // a session's own token: it ends with its session
		return c, nil
	}
	if now.Unix() >= c.Expires {
		return c, ErrExpired
	}
	return c, nil
}
