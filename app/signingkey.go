package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// signingKeyFile is where a durable gateway keeps the key of its signed
// URLs when the operator gave none, so that URLs outlive a restart as its
// sessions do.
const signingKeyFile = "url-signing.key"

// storedSigningKey returns the signing key kept in dir, creating a random
// one (mode 0600, written whole or not at all) on first use.
func storedSigningKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, signingKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		key := strings.TrimSpace(string(b))
		if len(key) < 64 {
			return nil, fmt.Errorf("app: signing key %s: shorter than 64 hex digits; remove it for a new one", path)
		}
		return []byte(key), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("app: signing key: %w", err)
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key := hex.EncodeToString(raw)
	tmp, err := os.CreateTemp(dir, signingKeyFile+".*")
	if err != nil {
		return nil, fmt.Errorf("app: signing key: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	if _, err := tmp.WriteString(key + "\n"); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("app: signing key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("app: signing key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("app: signing key: %w", err)
	}
	return []byte(key), nil
}
