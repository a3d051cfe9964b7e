package sessions_test

import (
	"strings"
	"testing"

	"github.com/glassroom/glassroom/sessions"
)

// TestPoolPreloadNames: Config.Validate accepts dotted module names and
// refuses anything else (the names become Python string literals, but a
// typo should fail at startup, not in every pooled kernel).
func TestPoolPreloadNames(t *testing.T) {
	for _, ok := range [][]string{nil, {"numpy"}, {"matplotlib.pyplot", "pandas", "_private.mod2"}} {
		if err := (sessions.Config{PoolPreload: ok}).Validate(); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	tooMany := make([]string, sessions.MaxPoolPreload+1)
	for i := range tooMany {
		tooMany[i] = "m"
	}
	for _, bad := range [][]string{{""}, {"numpy pandas"}, {"os; import shutil"}, {"a..b"}, {".a"}, {"a."}, {"1abc"}, {"a.2b"},
		{"nümpy"}, {"a')]; import os #"}, {strings.Repeat("a", 201)}, tooMany} {
		if err := (sessions.Config{PoolPreload: bad}).Validate(); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
