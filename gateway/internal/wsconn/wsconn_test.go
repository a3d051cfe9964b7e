package wsconn

import (
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// TestEnterRacesShutdown: connections entering while the group shuts down
// and waits (a client connecting as the gateway stops) either count and
// are waited for, or get an ended context and are not counted; Wait never
// races an Add (the race detector watches), and nothing entered after
// Shutdown is left running.
func TestEnterRacesShutdown(t *testing.T) {
	for round := 0; round < 50; round++ {
		g := NewGroup(zerolog.Nop(), LargeFrames{})
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, leave := g.Enter()
				<-ctx.Done() // a connection lives until the group shuts down
				leave()
			}()
		}
		for i := 0; i < 8; i++ { // short connections, racing Wait itself
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, leave := g.Enter()
				leave()
			}()
		}
		g.Shutdown()
		g.Wait()
		wg.Wait()
		ctx, leave := g.Enter()
		if ctx.Err() == nil {
			t.Fatal("a connection entering after Shutdown has a live context")
		}
		leave()
		g.Wait() // not counted: returns at once
	}
}
