package tenant

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"

	"github.com/labstack/echo/v4"
)

// Keys is the set of accepted API keys. It is immutable and safe for
// concurrent use.
type Keys struct {
	sums [][32]byte // sha256 of each key
}

// NewKeys holds keys (only their hashes are kept).
func NewKeys(keys []string) *Keys {
	k := &Keys{}
	for _, key := range keys {
		k.sums = append(k.sums, sha256.Sum256([]byte(key)))
	}
	return k
}

// Lookup checks key against every accepted key in constant time and
// returns a stable tenant id derived from it (never the key itself).
func (k *Keys) Lookup(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(key))
	found := 0
	for _, s := range k.sums {
		found |= subtle.ConstantTimeCompare(sum[:], s[:])
	}
	if found != 1 {
		return "", false
	}
	return hex.EncodeToString(sum[:8]), true
}

const contextKey = "glassroom.tenant"

// Set records the tenant of an authenticated request.
func Set(c echo.Context, id string) { c.Set(contextKey, id) }

// Of is the tenant Set recorded. It panics on a request no authentication
// middleware let through (a routing mistake, which echo's recovery turns
// into a 500).
func Of(c echo.Context) string { return c.Get(contextKey).(string) }
