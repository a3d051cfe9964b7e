package local_test

import (
	"testing"

	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// TestBash runs the bash kernel's suite in bubblewrap sandboxes.
func TestBash(t *testing.T) {
	r := newRuntime(t, local.Config{})
	runtimetest.Bash(t, func(t *testing.T, spec sandbox.Spec) runtimetest.Kernel {
		seq++
		spec.ID = "test-bash-" + string(rune('a'+seq%26))
		return runtimetest.Start(t, r, spec)
	})
}
