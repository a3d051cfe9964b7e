package sandbox

import (
	"context"
	"time"
)

// Every calls tick every interval until ctx ends, then returns nil; the
// first call is one interval after the start. tick runs on the caller's
// goroutine, so calls never overlap; a slow tick delays the next one. It
// is the body of a runtime's Run (its periodic reconcile).
func Every(ctx context.Context, interval time.Duration, tick func(context.Context)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			tick(ctx)
		}
	}
}
