package app_test

import (
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
)

// percentiles reports the p50 and p90 of took, in ms.
func percentiles(b *testing.B, took []time.Duration) {
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkSandboxFileRead measures a read of a file outside the
// workspace (GET .../sandbox-files?path=/proc/self/status: a short
// command in the sandbox) on each runtime.
func BenchmarkSandboxFileRead(b *testing.B) {
	for name, rt := range apptest.Runtimes() {
		b.Run(name, func(b *testing.B) {
			g := apptest.Start(b, rt(b), apptest.Options{})
			var s api.Session
			if st := g.Call(b, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); st != http.StatusCreated {
				b.Fatalf("create: %d", st)
			}
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				g.Fetch(b, bearer, "GET", "/v1/sessions/"+s.ID+"/sandbox-files?path=/proc/self/status", nil, http.StatusOK)
				took = append(took, time.Since(start))
			}
			percentiles(b, took)
		})
	}
}

// BenchmarkResumeByUse measures the first execution of a session paused
// at its timeout with auto_resume (its thaw included), on each runtime:
// each round sets the timeout to now, waits for the pause, then times
// `1`.
func BenchmarkResumeByUse(b *testing.B) {
	for name, rt := range apptest.Runtimes() {
		b.Run(name, func(b *testing.B) {
			g := apptest.Start(b, rt(b), apptest.Options{})
			life := 600.0
			var s api.Session
			if st := g.Call(b, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{LifetimeS: &life,
				Lifecycle: &api.Lifecycle{OnTimeout: "pause", AutoResume: true}}, &s); st != http.StatusCreated {
				b.Fatalf("create: %d", st)
			}
			zero := 0.0
			var took []time.Duration
			for b.Loop() {
				b.StopTimer()
				g.Call(b, bearer, "PATCH", "/v1/sessions/"+s.ID, api.UpdateSessionRequest{LifetimeS: &zero}, nil)
				for deadline := time.Now().Add(time.Minute); ; {
					var info api.Session
					g.Call(b, bearer, "GET", "/v1/sessions/"+s.ID, nil, &info)
					if info.PausedAtTimeout {
						break
					}
					if time.Now().After(deadline) {
						b.Fatal("not paused at its timeout")
					}
				}
				b.StartTimer()
				start := time.Now()
				var x api.Execution
				if st := g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]string{"code": "1"}, &x); st != http.StatusOK || x.Status != "ok" {
					b.Fatalf("execute: %d %+v", st, x)
				}
				took = append(took, time.Since(start))
			}
			percentiles(b, took)
		})
	}
}
