package docker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// TestBash runs the bash kernel's suite in containers (gVisor with
// GLASSROOM_TEST_OCI_RUNTIME=runsc).
func TestBash(t *testing.T) {
	r := newRuntime(t, docker.Config{})
	runtimetest.Bash(t, func(t *testing.T, spec sandbox.Spec) runtimetest.Kernel {
		n++
		spec.ID = "docker-bash-" + strconv.Itoa(n) + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
		return runtimetest.Start(t, r, spec)
	})
}
