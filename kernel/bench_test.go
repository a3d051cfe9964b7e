package kernel_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
)

// BenchmarkExecuteRoundTrip measures one `x + 1` execute round trip, from
// sending execute_request to having the reply and the idle status, straight
// to a kernel over ipc. It reports p50 and p99 besides the mean.
func BenchmarkExecuteRoundTrip(b *testing.B) {
	k := startBareKernel(b)
	c := dial(b, k.info)
	ctx := context.Background()
	if _, err := c.Execute(ctx, "x = 41", kernel.ExecuteOptions{}, nil); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		got := false
		_, err := c.Execute(ctx, "x + 1", kernel.ExecuteOptions{}, func(ev kernel.Event) { got = got || ev.Kind == kernel.EventResult })
		if err != nil || !got {
			b.Fatalf("execute: %v (result %v)", err, got)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
