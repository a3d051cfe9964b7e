package sessions_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

func benchRuntimes(b *testing.B) map[string]sessions.Runtime {
	dir := b.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	out := map[string]sessions.Runtime{}
	// local: forked from a template that preloads the analysis stack, as
	// `serve` has it (--fork-server, --pool-preload); local-exec: every
	// kernel an interpreter of its own.
	for name, fork := range map[string]local.ForkConfig{"local": {Preload: []string{"numpy", "pandas", "matplotlib.pyplot"}}, "local-exec": {Disabled: true}} {
		ldir := filepath.Join(dir, name)
		os.Mkdir(ldir, 0o711)
		lrt, err := local.New(local.Config{Common: sandbox.Common{StateDir: ldir, UIDBase: testkit.UIDBase(b)}, Fork: fork}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { lrt.Close() })
		out[name] = lrt
	}
	ddir := filepath.Join(dir, "docker")
	os.Mkdir(ddir, 0o711)
	// GLASSROOM_TEST_KERNEL_IMAGE: another image than the default (to compare).
	drt, err := docker.New(context.Background(), docker.Config{Instance: "bench", Image: os.Getenv("GLASSROOM_TEST_KERNEL_IMAGE"),
		Common: sandbox.Common{StateDir: ddir, UIDBase: testkit.UIDBase(b)}}, zerolog.Nop())
	if err == nil {
		b.Cleanup(func() { drt.Close() })
		out["docker"] = drt
	} else {
		b.Logf("docker runtime unavailable, benchmarking local only: %v", err)
	}
	return out
}

// createAndAnswer creates a session of m and waits for its first `x + 1`.
func createAndAnswer(b *testing.B, m *sessions.Manager) *sessions.Session {
	s, err := m.Create(context.Background(), "bench", sessions.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := s.First().Execute(context.Background(), sessions.ExecRequest{Code: "x = 41\nx + 1"})
	if err != nil || string(e.Result) != `{"text/plain":"42"}` {
		b.Fatalf("x + 1: %v %+v", err, e)
	}
	return s
}

// BenchmarkColdSession measures POST-equivalent session creation (sandbox
// start, kernel boot, connection) up to the first `x + 1` result.
func BenchmarkColdSession(b *testing.B) {
	for name, rt := range benchRuntimes(b) {
		b.Run(name, func(b *testing.B) {
			m, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(context.Background())
			for i := 0; i < b.N; i++ {
				s := createAndAnswer(b, m)
				b.StopTimer()
				m.Delete(context.Background(), "bench", s.ID())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkFirstImport measures the first `import pandas; import
// matplotlib.pyplot` cell of a new session (the session's creation is not
// timed): what code that analyses data waits for first.
func BenchmarkFirstImport(b *testing.B) {
	for name, rt := range benchRuntimes(b) {
		b.Run(name, func(b *testing.B) {
			m, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(context.Background())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := createAndAnswer(b, m)
				b.StartTimer()
				e, err := s.First().Execute(context.Background(), sessions.ExecRequest{Code: "import pandas; import matplotlib.pyplot"})
				b.StopTimer()
				if err != nil || e.Status != sessions.StatusOK {
					b.Fatalf("import: %v %+v", err, e)
				}
				m.Delete(context.Background(), "bench", s.ID())
				b.StartTimer()
			}
		})
	}
}

// BenchmarkPooledSession measures session creation up to the first
// `x + 1` result when a warm pool (Config.Pool) has a kernel ready: the
// figure a user sees from POST /v1/sessions with the default limits. The
// pool's refill is not timed: each iteration waits, untimed, for a ready
// kernel before creating.
func BenchmarkPooledSession(b *testing.B) {
	for name, rt := range benchRuntimes(b) {
		b.Run(name, func(b *testing.B) {
			benchPooled(b, rt, sessions.Config{Pool: 2}, createAndAnswer)
		})
	}
}

// firstAnalysisCell is what almost every code-interpreter conversation
// runs first.
const firstAnalysisCell = `import numpy as np, pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame({"x": np.arange(100)})
plt.plot(df.x, np.sqrt(df.x))
plt.show()`

// createAndAnalyse creates a session and runs firstAnalysisCell, whose
// PNG must come back.
func createAndAnalyse(b *testing.B, m *sessions.Manager) *sessions.Session {
	s, err := m.Create(context.Background(), "bench", sessions.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := s.First().Execute(context.Background(), sessions.ExecRequest{Code: firstAnalysisCell})
	png := false
	for _, ev := range e.Outputs {
		png = png || strings.Contains(string(ev.Data), `"image/png"`)
	}
	if err != nil || e.Status != sessions.StatusOK || !png {
		b.Fatalf("the first analysis cell: %v %+v", err, e)
	}
	return s
}

// BenchmarkFirstAnalysisCell measures create + firstAnalysisCell + its
// PNG: cold, from the warm pool, and from a pool that preloads numpy,
// pandas and matplotlib.pyplot (Config.PoolPreload).
func BenchmarkFirstAnalysisCell(b *testing.B) {
	for name, rt := range benchRuntimes(b) {
		b.Run(name+"/cold", func(b *testing.B) {
			m, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(context.Background())
			benchLatency(b, func() *sessions.Session { return createAndAnalyse(b, m) }, func(s *sessions.Session) {
				m.Delete(context.Background(), "bench", s.ID())
			}, func() {})
		})
		b.Run(name+"/pool", func(b *testing.B) {
			benchPooled(b, rt, sessions.Config{Pool: 2}, createAndAnalyse)
		})
		b.Run(name+"/pool-preload", func(b *testing.B) {
			benchPooled(b, rt, sessions.Config{Pool: 2, PoolPreload: []string{"numpy", "pandas", "matplotlib.pyplot"}}, createAndAnalyse)
		})
	}
}

// benchPooled times create (from the pool of a manager with cfg) up to
// what answer waits for; the pool's refill is not timed.
func benchPooled(b *testing.B, rt sessions.Runtime, cfg sessions.Config, answer func(*testing.B, *sessions.Manager) *sessions.Session) {
	m, err := sessions.New(cfg, rt, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done; m.Close(context.Background()) }()
	benchLatency(b, func() *sessions.Session { return answer(b, m) }, func(s *sessions.Session) {
		m.Delete(context.Background(), "bench", s.ID())
	}, func() {
		for deadline := time.Now().Add(time.Minute); m.Pool().Ready < 1; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("the pool never filled: %+v", m.Pool())
			}
		}
	})
}

// benchLatency times op b.N times, with ready (before) and cleanup
// (after) untimed, and reports p50 and p90.
func benchLatency(b *testing.B, op func() *sessions.Session, cleanup func(*sessions.Session), ready func()) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ready()
		b.StartTimer()
		start := time.Now()
		s := op()
		lat = append(lat, time.Since(start))
		b.StopTimer()
		cleanup(s)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkIdleMemory reports the resident memory of one idle session's
// sandbox (every process of its host uid), after `x + 1` and after
// importing numpy, pandas and matplotlib.
func BenchmarkIdleMemory(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs per-sandbox uids (root)")
	}
	for name, rt := range benchRuntimes(b) {
		b.Run(name, func(b *testing.B) {
			m, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(context.Background())
			var bare, loaded float64
			for i := 0; i < b.N; i++ {
				s, err := m.Create(context.Background(), "bench", sessions.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				s.First().Execute(context.Background(), sessions.ExecRequest{Code: "x = 41\nx + 1"})
				time.Sleep(300 * time.Millisecond)
				bare = rssMiB(b, s.Workspace())
				s.First().Execute(context.Background(), sessions.ExecRequest{Code: "import numpy, pandas, matplotlib.pyplot"})
				time.Sleep(300 * time.Millisecond)
				loaded = rssMiB(b, s.Workspace())
				m.Delete(context.Background(), "bench", s.ID())
			}
			b.ReportMetric(bare, "idle-MiB")
			b.ReportMetric(loaded, "with-numpy-pandas-mpl-MiB")
		})
	}
}

func rssMiB(b *testing.B, workspace string) float64 {
	var st syscall.Stat_t
	if err := syscall.Stat(workspace, &st); err != nil {
		b.Fatal(err)
	}
	var kb int64
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pst syscall.Stat_t
		if e.Name()[0] < '0' || e.Name()[0] > '9' || syscall.Stat("/proc/"+e.Name(), &pst) != nil || pst.Uid != st.Uid {
			continue
		}
		status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
				kb += n
			}
		}
	}
	return float64(kb) / 1024
}

// BenchmarkExecuteAfterPause measures `x + 1` on a session whose idle
// kernel was frozen (Config.PauseAfter): the thaw and the execution
// together, against the same execution on a kernel that was not paused.
func BenchmarkExecuteAfterPause(b *testing.B) {
	for name, rt := range benchRuntimes(b) {
		for _, paused := range []bool{false, true} {
			b.Run(name+"/paused="+strconv.FormatBool(paused), func(b *testing.B) {
				cfg := sessions.Config{ReapInterval: 20 * time.Millisecond}
				if paused {
					cfg.PauseAfter = 50 * time.Millisecond
				}
				m, err := sessions.New(cfg, rt, zerolog.Nop())
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { m.Run(ctx); close(done) }()
				defer func() { cancel(); <-done; m.Close(context.Background()) }()
				s, err := m.Create(context.Background(), "bench", sessions.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.First().Execute(context.Background(), sessions.ExecRequest{Code: "x = 41"}); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					for paused && !s.Info().Paused {
						time.Sleep(5 * time.Millisecond)
					}
					b.StartTimer()
					e, err := s.First().Execute(context.Background(), sessions.ExecRequest{Code: "x + 1"})
					if err != nil || string(e.Result) != `{"text/plain":"42"}` {
						b.Fatalf("x + 1: %v %+v", err, e)
					}
				}
			})
		}
	}
}
