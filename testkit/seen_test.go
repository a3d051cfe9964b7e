package testkit_test

import (
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
)

// TestEventuallySaysWhatItSawLast: a Seen argument of the give-up message
// is read at the give-up, with the format's verb.
func TestEventuallySaysWhatItSawLast(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	state := struct{ State string }{"starting"}
	go func() {
		defer close(done)
		testkit.Eventually(ft, 10*time.Millisecond, func() bool { state.State = "busy"; return false },
			"never idle: last %+v, %q", testkit.Seen(func() any { return state }), testkit.Seen(func() any { return state.State }))
	}()
	<-done
	if want := `not within 10ms: never idle: last {State:busy}, "busy"`; ft.msg != want {
		t.Fatalf("message %q, want %q", ft.msg, want)
	}
}
