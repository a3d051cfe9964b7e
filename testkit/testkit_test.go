package testkit_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
)

func TestWithin(t *testing.T) {
	var n atomic.Int32
	if !testkit.Within(time.Second, func() bool { return n.Add(1) == 3 }) {
		t.Fatal("a condition that holds on the third look was not seen")
	}
	if testkit.Within(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported as held")
	}
}

func TestEventuallyFails(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine, as it ends a test
		defer close(done)
		testkit.Eventually(ft, 10*time.Millisecond, func() bool { return false }, "x is %d", 1)
	}()
	<-done
	if ft.msg != "not within 10ms: x is 1" {
		t.Fatalf("message %q", ft.msg)
	}
}

type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
