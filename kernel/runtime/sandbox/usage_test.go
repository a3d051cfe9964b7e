package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRunnableThreads: a thread that spins is counted runnable; a list of
// threads that all sleep counts none.
func TestRunnableThreads(t *testing.T) {
	tids := func() string {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range ents {
			b.WriteString(e.Name() + "\n")
		}
		return b.String()
	}
	tasks := filepath.Join(t.TempDir(), "tasks")
	var stop atomic.Bool
	spinning := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(spinning)
		for !stop.Load() {
		}
	}()
	<-spinning
	if err := os.WriteFile(tasks, []byte(tids()), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := runnableThreads(tasks); n < 1 {
		t.Fatalf("a spinning thread is not counted runnable: %d", n)
	}
	stop.Store(true)
	if err := os.WriteFile(tasks, []byte("1\n"), 0o644); err != nil { // init: asleep
		t.Fatal(err)
	}
	if n := runnableThreads(tasks); n != 0 {
		t.Fatalf("a sleeping init counted runnable: %d", n)
	}
}
