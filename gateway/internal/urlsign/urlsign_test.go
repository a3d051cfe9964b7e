package urlsign_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/urlsign"
)

func TestSignVerify(t *testing.T) {
	key := urlsign.NewKey()
	s, err := urlsign.New(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	c := urlsign.Claims{Session: "s1", Tenant: "tenant-secret", Path: "data/a.csv", Op: urlsign.Read, Expires: now.Add(time.Minute).Unix()}
	tok := s.Sign(c)
	if got, err := s.Verify(tok, now); err != nil || got != c {
		t.Fatalf("verify: %+v %v", got, err)
	}
	if _, err := s.Verify(tok, now.Add(time.Minute)); !errors.Is(err, urlsign.ErrExpired) {
		t.Fatalf("at its expiry: %v", err)
	}
	// Opaque: the token shows neither the claims nor a decodable body.
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	for _, secret := range []string{"tenant-secret", "data/a.csv", `"s1"`} {
		if bytes.Contains(raw, []byte(secret)) || strings.Contains(tok, secret) {
			t.Fatalf("the token shows %q", secret)
		}
	}
	// Two tokens of the same claims differ (a fresh nonce each).
	if s.Sign(c) == tok {
		t.Fatal("the same claims sealed twice gave the same token")
	}
	// A replica with the same key opens it.
	replica, _ := urlsign.New(key)
	if _, err := replica.Verify(tok, now); err != nil {
		t.Fatalf("a replica with the same key: %v", err)
	}
	// Another key, a flipped byte, a cut token, garbage: refused.
	stranger, _ := urlsign.New(urlsign.NewKey())
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)/2] ^= 1
	for name, bad := range map[string]string{
		"another key":   "",
		"a flipped bit": base64.RawURLEncoding.EncodeToString(flipped),
		"cut":           tok[:len(tok)-4],
		"short":         "AAAA",
		"garbage":       "!!.??",
		"too long":      strings.Repeat("a", urlsign.MaxTokenBytes+1),
	} {
		v := s
		if name == "another key" {
			v, bad = stranger, tok
		}
		if _, err := v.Verify(bad, now); !errors.Is(err, urlsign.ErrBadToken) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := urlsign.New([]byte("short")); err == nil {
		t.Fatal("a short key was taken")
	}
	if _, err := s.Verify(s.Sign(urlsign.Claims{Session: "s1", Op: "delete", Expires: c.Expires}), now); !errors.Is(err, urlsign.ErrBadToken) {
		t.Fatalf("an unknown operation: %v", err)
	}
	// Host tags: 16 DNS-label letters, the same for a replica, another
	// for another session or key.
	tag := s.HostTag("s1")
	if len(tag) != urlsign.HostTagLen || strings.ToLower(tag) != tag || !replica.CheckHostTag(tag, "s1") {
		t.Fatalf("tag %q", tag)
	}
	if s.CheckHostTag(tag, "s2") || stranger.CheckHostTag(tag, "s1") {
		t.Fatal("a tag granted what it was not for")
	}
}
