//go:build heavy

package density_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
)

// BenchmarkDensity creates DENSITY_SESSIONS (default 100) sessions per
// runtime and reports what one idle session costs: the sandbox's memory
// (PSS, shared pages counted once), the gateway's (RSS growth, without the
// race detector when run by make bench), creation throughput, and the
// gateway's CPU while every session sits idle for 10 s.
func BenchmarkDensity(b *testing.B) {
	n := 100
	if v, err := strconv.Atoi(os.Getenv("DENSITY_SESSIONS")); err == nil && v > 1 {
		n = v
	}
	for name, rt := range apptest.Runtimes() {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runtime.GC()
				before := rssKiB(os.Getpid())
				f := newFleet(b, rt(b, 410000), n)
				ctx := context.Background()
				// One execute with a file write, in the first and the last.
				for _, id := range []string{f.ids[0], f.ids[n-1]} {
					if x, err := f.c.Execute(ctx, id, "open('f.txt','w').write('x')", client.ExecuteOptions{}); err != nil || len(x.Files) != 1 {
						b.Fatalf("execute with a file write: %+v %v", x, err)
					}
				}
				time.Sleep(2 * time.Second)
				runtime.GC()
				// Sandboxes run as uid base+slot: the first ten.
				base := uint32(410000)
				if name == "docker" {
					base += 50000 // apptest.Docker's uid offset
				}
				var pss int64
				for uid := base; uid < base+10; uid++ {
					pss += pssKiB(uid)
				}
				var ru0, ru1 syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				time.Sleep(10 * time.Second)
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
				b.ReportMetric(float64(pss)/10/1024, "kernel-PSS-MiB/session")
				b.ReportMetric(float64(rssKiB(os.Getpid())-before)/1024/float64(n), "gateway-MiB/session")
				b.ReportMetric(float64(n-1)/f.created.Seconds(), "sessions-created/s")
				b.ReportMetric(float64(cpu.Milliseconds())/10, "gateway-idle-CPU-ms/s")
			}
		})
	}
}
