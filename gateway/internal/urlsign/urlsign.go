// Package urlsign signs and verifies the tokens of signed file URLs:
// expiring, single-purpose, path-bound grants that a browser or a bare
// HTTP client uses without the API key.
//
// A token is base64url(JSON claims) "." base64url(HMAC-SHA256(key,
// claims)). Replicas that share the key honour each other's tokens. A
// Signer is immutable and safe for concurrent use.
package urlsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Operations a token grants.
const (
	Read  = "read"
	Write = "write"
)

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 32

// MaxTokenBytes bounds a token's text: a longer one is refused unread.
const MaxTokenBytes = 8 << 10

var (
	// ErrBadToken is a malformed token, or one whose signature is not this
	// key's.
	ErrBadToken = errors.New("urlsign: invalid signature")
	// ErrExpired is a token signed correctly whose time is past.
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

// Signer signs and verifies tokens with one key.
type Signer struct {
	key []byte
}

// New returns a signer with key (at least MinKeyBytes).
func New(key []byte) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("urlsign: the signing key must be at least %d bytes", MinKeyBytes)
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

// DeriveKey is the signing key of gateways that were given none: a hash
// of their API keys, so that replicas with the same keys share it, and
// changing the keys revokes every URL. Knowing one API key does not give
// it: it takes all of them.
func DeriveKey(apiKeys []string) []byte {
	keys := append([]string(nil), apiKeys...)
	sort.Strings(keys)
	m := hmac.New(sha256.New, []byte("glassroom signed file URLs v1"))
	for _, k := range keys {
		m.Write([]byte(k))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// Sign returns the token of c.
func (s *Signer) Sign(c Claims) string {
	body, _ := json.Marshal(c) // plain strings and an int: cannot fail
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(s.mac(body))
}

// Verify returns the claims of token if it is this key's and not
// expired at now: ErrBadToken or ErrExpired otherwise.
func (s *Signer) Verify(token string, now time.Time) (Claims, error) {
	if len(token) > MaxTokenBytes {
		return Claims{}, ErrBadToken
	}
	b64, sig64, ok := strings.Cut(token, ".")
	if !ok {
		return Claims{}, ErrBadToken
	}
	enc := base64.RawURLEncoding
	body, err1 := enc.DecodeString(b64)
	sig, err2 := enc.DecodeString(sig64)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, s.mac(body)) {
		return Claims{}, ErrBadToken
	}
	var c Claims
	if err := json.Unmarshal(body, &c); err != nil || c.Session == "" || (c.Op != Read && c.Op != Write) {
		return Claims{}, ErrBadToken
	}
	if now.Unix() >= c.Expires {
		return c, ErrExpired
	}
	return c, nil
}

func (s *Signer) mac(body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(body)
	return m.Sum(nil)
}
