package sessions

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkExecSlots measures a slot's acquire and release, the cost the
// fair scheduler adds to every execution: alone (the fast path), and with
// 8 goroutines of 4 tenants contending for 4 slots.
func BenchmarkExecSlots(b *testing.B) {
	b.Run("uncontended", func(b *testing.B) {
		e := newExecSlots(4, time.Minute)
		for b.Loop() {
			rel, err := e.acquire(context.Background(), "t")
			if err != nil {
				b.Fatal(err)
			}
			rel()
		}
	})
	b.Run("contended", func(b *testing.B) {
		e := newExecSlots(4, time.Minute)
		b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
		var n atomic.Int32
		b.RunParallel(func(pb *testing.PB) {
			tenant := strconv.Itoa(int(n.Add(1) % 4))
			for pb.Next() {
				rel, err := e.acquire(context.Background(), tenant)
				if err != nil {
					b.Error(err)
					return
				}
				rel()
			}
		})
	})
}
