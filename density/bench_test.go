//go:build heavy

package density_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
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
				r := rt(b)
				f := newFleet(b, r, n)
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
				base := uint32(r.Common.UIDBase)
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

// BenchmarkTimeoutUnderLoad: TIMEOUT_SESSIONS (default 100) sessions each
// hold x, then all run a numpy loop with a 3 s timeout at once, beside 4
// (TIMEOUT_BURNERS) CPU-bound processes (on this 2-core machine: the loaded host where an
// interrupt takes longest to land). It reports how many sessions kept x
// (the goal: all) and how long the interrupt took to end the cell, from
// the timeout to the reply (p50, p99, max).
func BenchmarkTimeoutUnderLoad(b *testing.B) {
	n := 100
	if v, err := strconv.Atoi(os.Getenv("TIMEOUT_SESSIONS")); err == nil && v > 1 {
		n = v
	}
	const timeout = 3 * time.Second
	rt := apptest.Local(b)
	for i := 0; i < b.N; i++ {
		f := newFleet(b, rt, n)
		ctx := context.Background()
		for _, id := range f.ids {
			if x, err := f.c.Execute(ctx, id, "x = 41\nimport numpy as np", client.ExecuteOptions{}); err != nil || x.Status != "ok" {
				b.Fatalf("x = 41: %+v %v", x, err)
			}
		}
		burners := 4
		if v, err := strconv.Atoi(os.Getenv("TIMEOUT_BURNERS")); err == nil && v >= 0 {
			burners = v
		}
		stop := burnCPU(b, burners)
		waited := make([]time.Duration, n)
		kept := make([]bool, n)
		var wg sync.WaitGroup
		for j, id := range f.ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				x, err := f.c.Execute(ctx, id, "a = np.ones((300, 300))\nwhile True:\n    a = a @ a / 300", client.ExecuteOptions{Timeout: timeout})
				if err != nil || x.Status != "timeout" {
					b.Errorf("session %d: %+v %v", j, x, err)
					return
				}
				waited[j] = time.Duration(x.DurationMS)*time.Millisecond - timeout
				kept[j] = !x.StateLost
				if x.StateLost {
					b.Logf("session %d lost its variables: %s", j, x.Reason)
				}
			}()
		}
		wg.Wait()
		stop()
		keptN := 0
		for j, id := range f.ids {
			x, err := f.c.Execute(ctx, id, "x", client.ExecuteOptions{})
			if kept[j] && (err != nil || x.Result.Text("text/plain") != "41") {
				b.Errorf("session %d said its state was kept, but x is %+v %v", j, x, err)
			}
			if kept[j] {
				keptN++
			}
		}
		slices.Sort(waited)
		b.ReportMetric(float64(keptN), "kept-of-"+strconv.Itoa(n))
		b.ReportMetric(float64(waited[n/2].Milliseconds()), "interrupt-p50-ms")
		b.ReportMetric(float64(waited[n*99/100].Milliseconds()), "interrupt-p99-ms")
		b.ReportMetric(float64(waited[n-1].Milliseconds()), "interrupt-max-ms")
	}
}

// burnCPU starts k CPU-bound processes and returns what stops them.
func burnCPU(tb testing.TB, k int) (stop func()) {
	tb.Helper()
	var cmds []*exec.Cmd
	for range k {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			tb.Fatalf("CPU burner: %v", err)
		}
		cmds = append(cmds, c)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}
