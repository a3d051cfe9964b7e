package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLiveSet(t *testing.T) {
	var s LiveSet
	if s.Has("a") {
		t.Fatal("an empty set has a")
	}
	if err := s.Claim("a"); err != nil {
		t.Fatal(err)
	}
	var se *SpecError
	if err := s.Claim("a"); !errors.As(err, &se) {
		t.Fatalf("second claim: %v, want a SpecError", err)
	}
	if !s.Has("a") || s.Has("b") {
		t.Fatal("Has is wrong after a claim")
	}
	s.Forget("a")
	s.Forget("never")
	if s.Has("a") {
		t.Fatal("a is still live after Forget")
	}
	if err := s.Claim("a"); err != nil {
		t.Fatalf("claim after forget: %v", err)
	}
}

func TestEveryStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := Every(ctx, time.Millisecond, func(context.Context) {
		if n++; n == 3 {
			cancel()
		}
	})
	if err != nil || n != 3 {
		t.Fatalf("Every: %v after %d ticks, want nil after 3", err, n)
	}
}
