package urlsign_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/urlsign"
)

func TestSignVerify(t *testing.T) {
	s, err := urlsign.New(urlsign.DeriveKey([]string{"key-a-0123456789", "key-b-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	c := urlsign.Claims{Session: "s1", Tenant: "t1", Path: "data/a.csv", Op: urlsign.Read, Expires: now.Add(time.Minute).Unix()}
	tok := s.Sign(c)
	if got, err := s.Verify(tok, now); err != nil || got != c {
		t.Fatalf("verify: %+v %v", got, err)
	}
	if _, err := s.Verify(tok, now.Add(time.Minute)); !errors.Is(err, urlsign.ErrExpired) {
		t.Fatalf("at its expiry: %v", err)
	}
	// The same API keys in another order: the same key (replicas agree).
	other, _ := urlsign.New(urlsign.DeriveKey([]string{"key-b-0123456789", "key-a-0123456789"}))
	if _, err := other.Verify(tok, now); err != nil {
		t.Fatalf("a replica with the same keys: %v", err)
	}
	// Another key set, a changed claim, a changed signature: refused.
	stranger, _ := urlsign.New(urlsign.DeriveKey([]string{"key-a-0123456789"}))
	forged := s.Sign(urlsign.Claims{Session: "s1", Tenant: "t1", Path: "data/b.csv", Op: urlsign.Read, Expires: c.Expires})
	body, sig, _ := strings.Cut(tok, ".")
	_, fsig, _ := strings.Cut(forged, ".")
	for name, bad := range map[string]string{
		"another key":         "",
		"a body with another": strings.SplitN(forged, ".", 2)[0] + "." + sig,
		"a signature moved":   body + "." + fsig,
		"no dot":              body,
		"garbage":             "!!.??",
		"too long":            strings.Repeat("a", urlsign.MaxTokenBytes+1),
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
}
