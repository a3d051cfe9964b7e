package sandbox

import (
	"context"
	"errors"
	"testing"
)

// TestCommandSetCloseWithDoneContext: a sandbox's Close does its work even
// with a done ctx: an empty set (or one whose commands end) closes
// without error, every time (the wait must not lose a race to ctx), and
// refuses new commands afterwards.
func TestCommandSetCloseWithDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 200; i++ {
		var s CommandSet
		if i%2 == 1 { // a slot that ends while Close waits
			sl, err := s.Begin()
			if err != nil {
				t.Fatal(err)
			}
			go sl.End()
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if _, err := s.Begin(); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: Begin after Close: %v", i, err)
		}
	}
}
