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

// TestAccessToken: a session's access token is the same each time and on
// every replica with the key, opaque, open-ended, bound to its session and
// tenant, and refused under another key.
func TestAccessToken(t *testing.T) {
	key := urlsign.NewKey()
	a, _ := urlsign.New(key)
	b, _ := urlsign.New(key)
	tok := a.AccessToken("tenant-secret", "s1")
	if tok != a.AccessToken("tenant-secret", "s1") || tok != b.AccessToken("tenant-secret", "s1") {
		t.Fatal("the access token of one session differs between asks or replicas")
	}
	if tok == a.AccessToken("tenant-secret", "s2") || tok == a.AccessToken("other", "s1") {
		t.Fatal("two sessions share an access token")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	if bytes.Contains(raw, []byte("tenant-secret")) || bytes.Contains(raw, []byte(`"s1"`)) {
		t.Fatal("the access token shows its claims")
	}
	got, err := b.Verify(tok, time.Now().Add(100*365*24*time.Hour))
	if err != nil || got != (urlsign.Claims{Session: "s1", Tenant: "tenant-secret", Op: urlsign.Access}) {
		t.Fatalf("verify: %+v %v", got, err)
	}
	traffic := a.TrafficToken("tenant-secret", "s1")
	if traffic == tok || traffic != b.TrafficToken("tenant-secret", "s1") {
		t.Fatal("the traffic token is the access token, or differs between replicas")
	}
	if got, err := b.Verify(traffic, time.Now().Add(100*365*24*time.Hour)); err != nil || got != (urlsign.Claims{Session: "s1", Tenant: "tenant-secret", Op: urlsign.Traffic}) {
		t.Fatalf("verify the traffic token: %+v %v", got, err)
	}
	other, _ := urlsign.New(urlsign.NewKey())
	if _, err := other.Verify(tok, time.Now()); !errors.Is(err, urlsign.ErrBadToken) {
		t.Fatalf("under another key: %v", err)
	}
	flipped := []byte(tok)
	flipped[len(flipped)/2] ^= 1
	if _, err := a.Verify(string(flipped), time.Now()); err == nil {
		t.Fatal("a changed token was accepted")
	}
	// A token of another operation never lives forever: Expires 0 is
	// only an access token's.
	if _, err := a.Verify(a.Sign(urlsign.Claims{Session: "s1", Tenant: "t", Path: "a", Op: urlsign.Read}), time.Now()); !errors.Is(err, urlsign.ErrExpired) {
		t.Fatalf("a read token without expiry: %v", err)
	}
}
