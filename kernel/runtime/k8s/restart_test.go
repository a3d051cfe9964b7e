package k8s

import (
	"testing"

	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// TestRestartStartsClean runs a real kernel in the simulated kubelet: a
// restart is a new generation in the same pod, whose /tmp (IPYTHONDIR,
// the caches) and ipc directory are emptyDirs that outlive it; the
// supervisor empties them before the next generation, so nothing planted
// there survives, and an IPython startup file planted there does not run.
// (The simulated pod's /dev/shm is the host's: the supervisor empties the
// real pod's like /tmp, which TestPodSpecHardening checks it is told to.)
func TestRestartStartsClean(t *testing.T) {
	cs := newClientset()
	startKubelet(t, cs, ns)
	k := runtimetest.Start(t, newRuntime(t, cs, testConfig("gw-clean")), sandbox.Spec{ID: "sess-clean-0001", Tenant: "tenant1"})
	runtimetest.RestartStartsClean(t, &k)
}
