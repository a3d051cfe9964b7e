package app_test

import (
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/app/apptest"
)

// benchState is the state BenchmarkSnapshot captures: the scientific
// stack with a DataFrame of 100k rows, a fitted model, a function and a
// class, an R data frame, bash variables, and a 1 MiB workspace file.
var benchState = []struct{ lang, code string }{
	{"python", `import numpy as np, pandas as pd
from sklearn.linear_model import LinearRegression
df = pd.DataFrame({"a": np.arange(100000), "b": np.random.default_rng(1).random(100000)})
model = LinearRegression().fit(df[["a"]], df["b"])
def f(x): return x * 2
class P:
    def __init__(self, x): self.x = x
p = P(3)
open("data.bin", "wb").write(bytes(1 << 20))`},
	{"r", `frame <- data.frame(x = 1:1000, y = rnorm(1000))`},
	{"bash", `greeting=hi; declare -a arr=(1 2 3)`},
}

// median reports the median of took as name, in ms.
func median(b *testing.B, took []time.Duration, name string) {
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, name)
}

// BenchmarkSnapshot measures, on each runtime, the capture of a session
// holding benchState (POST .../snapshots) and a new session's start from
// it (POST /v1/sessions {"snapshot"}, the restore included), with the
// snapshot's size.
func BenchmarkSnapshot(b *testing.B) {
	for name, rt := range apptest.Runtimes() {
		b.Run(name, func(b *testing.B) {
			g := apptest.Start(b, rt(b), apptest.Options{})
			var s api.Session
			if st := g.Call(b, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); st != http.StatusCreated {
				b.Fatalf("create: %d", st)
			}
			for _, st := range benchState {
				var x api.Execution
				if c := g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]string{"code": st.code, "language": st.lang}, &x); c != http.StatusOK || x.Status != "ok" {
					b.Fatalf("%s: %d %+v", st.lang, c, x)
				}
			}
			var capture, restore []time.Duration
			var size int64
			for b.Loop() {
				start := time.Now()
				var snap api.Snapshot
				if st := g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/snapshots", nil, &snap); st != http.StatusCreated {
					b.Fatalf("snapshot: %d", st)
				}
				capture = append(capture, time.Since(start))
				size = snap.SizeBytes
				start = time.Now()
				var r api.Session
				if st := g.Call(b, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{Snapshot: snap.ID}, &r); st != http.StatusCreated || r.Restore == nil || r.Restore.Error != "" {
					b.Fatalf("restore: %d %+v", st, r.Restore)
				}
				restore = append(restore, time.Since(start))
				b.StopTimer()
				g.Fetch(b, bearer, "DELETE", "/v1/sessions/"+r.ID, nil, http.StatusNoContent)
				g.Fetch(b, bearer, "DELETE", "/v1/snapshots/"+snap.ID, nil, http.StatusNoContent)
				b.StartTimer()
			}
			median(b, capture, "capture-p50-ms")
			median(b, restore, "restore-p50-ms")
			b.ReportMetric(float64(size)/(1<<20), "snapshot-MiB")
		})
	}
}

// BenchmarkFork measures a fork (count 1, then 3) of a session with the
// scientific stack imported and a DataFrame, on each runtime.
func BenchmarkFork(b *testing.B) {
	for name, rt := range apptest.Runtimes() {
		for _, count := range []int{1, 3} {
			b.Run(name+"/count="+string(rune('0'+count)), func(b *testing.B) {
				g := apptest.Start(b, rt(b), apptest.Options{})
				var s api.Session
				if st := g.Call(b, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{}, &s); st != http.StatusCreated {
					b.Fatalf("create: %d", st)
				}
				var x api.Execution
				g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]string{"code": benchState[0].code + "\nimport matplotlib.pyplot as plt, scipy"}, &x)
				if x.Status != "ok" {
					b.Fatalf("%+v", x)
				}
				var took []time.Duration
				for b.Loop() {
					start := time.Now()
					var out api.ForkResult
					if st := g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/fork", api.ForkRequest{Count: &count}, &out); st != http.StatusCreated || len(out.Forks) != count {
						b.Fatalf("fork: %d %+v", st, out)
					}
					took = append(took, time.Since(start))
					b.StopTimer()
					for _, f := range out.Forks {
						if f.Session == nil {
							b.Fatalf("a fork failed: %+v", f.Error)
						}
						g.Fetch(b, bearer, "DELETE", "/v1/sessions/"+f.Session.ID, nil, http.StatusNoContent)
					}
					b.StartTimer()
				}
				percentiles(b, took)
			})
		}
	}
}

// BenchmarkWake measures the resume of a hibernated session (pause with
// keep_memory false) and its first execution: the wake, a new sandbox
// and the restore, on each runtime; and reports the memory its sandbox
// held before, which hibernation frees.
func BenchmarkWake(b *testing.B) {
	for name, rt := range apptest.Runtimes() {
		b.Run(name, func(b *testing.B) {
			g := apptest.Start(b, rt(b), apptest.Options{})
			no := false
			var s api.Session
			if st := g.Call(b, bearer, "POST", "/v1/sessions", api.CreateSessionRequest{
				Lifecycle: &api.Lifecycle{OnTimeout: "pause", KeepMemory: &no}}, &s); st != http.StatusCreated {
				b.Fatalf("create: %d", st)
			}
			var x api.Execution
			g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]string{"code": benchState[0].code}, &x)
			if x.Status != "ok" {
				b.Fatalf("%+v", x)
			}
			var took []time.Duration
			var freed int64
			for b.Loop() {
				b.StopTimer()
				var m api.Metrics
				g.Call(b, bearer, "GET", "/v1/sessions/"+s.ID+"/metrics", nil, &m)
				freed = max(freed, m.MemUsed)
				var info api.Session
				if st := g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/pause", api.PauseRequest{KeepMemory: &no}, &info); st != http.StatusOK || !info.Hibernated {
					b.Fatalf("hibernate: %d %+v", st, info)
				}
				b.StartTimer()
				start := time.Now()
				g.Fetch(b, bearer, "POST", "/v1/sessions/"+s.ID+"/resume", nil, http.StatusOK)
				if st := g.Call(b, bearer, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]string{"code": "len(df)"}, &x); st != http.StatusOK || x.Status != "ok" {
					b.Fatalf("execute: %d %+v", st, x)
				}
				took = append(took, time.Since(start))
			}
			percentiles(b, took)
			b.ReportMetric(float64(freed)/(1<<20), "freed-MiB")
		})
	}
}
