package app

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A durable gateway's signing key is created once, private, and the same
// after a restart; a truncated one is refused rather than used.
func TestStoredSigningKey(t *testing.T) {
	dir := t.TempDir()
	first, err := storedSigningKey(dir)
	if err != nil || len(first) != 64 {
		t.Fatalf("first: %q %v", first, err)
	}
	again, err := storedSigningKey(dir)
	if err != nil || !bytes.Equal(first, again) {
		t.Fatalf("after a restart: %q %v", again, err)
	}
	fi, err := os.Stat(filepath.Join(dir, signingKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi, err)
	}
	if other, _ := storedSigningKey(t.TempDir()); bytes.Equal(first, other) {
		t.Fatal("two state dirs drew the same key")
	}
	if err := os.WriteFile(filepath.Join(dir, signingKeyFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := storedSigningKey(dir); err == nil {
		t.Fatal("a truncated key was taken")
	}
}
