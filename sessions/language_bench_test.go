package sessions_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
	"github.com/rs/zerolog"
)

// benchLanguages are a trivial computation per kernel and what its result
// or output holds.
var benchLanguages = []struct{ kernel, code, want string }{
	{"python3", "41 + 1", "42"},
	{"r", "41 + 1", "42"},
	{"javascript", "41 + 1", "42"},
	{"typescript", "const y: number = 41; y + 1", "42"},
	{"bash", "echo $((41 + 1))", "42"},
}

// answered runs code in s and fails b unless its result or stdout holds
// want.
func answered(b *testing.B, k *sessions.Kernel, code, want string) {
	e, err := k.Execute(context.Background(), sessions.ExecRequest{Code: code})
	shown := ""
	if err == nil {
		shown = string(e.Result) + e.Stdout
		for _, o := range e.Outputs { // IRkernel shows values as displays
			shown += string(o.Data)
		}
	}
	if err != nil || e.Status != sessions.StatusOK || !strings.Contains(shown, want) {
		b.Fatalf("%s: %v %+v", code, err, e)
	}
}

// installed reports whether m's runtime runs kernel; benchmarks skip the
// others (the tests, not the benchmarks, require every kernel in CI).
func installed(m *sessions.Manager, kernel string) bool {
	_, err := m.ResolveKernel(kernel)
	return err == nil
}

// BenchmarkLanguageColdSession measures a new session whose first kernel
// is each language, up to its first result.
func BenchmarkLanguageColdSession(b *testing.B) {
	for name, rt := range benchRuntimes(b) {
		m, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close(context.Background()) })
		for _, l := range benchLanguages {
			if !installed(m, l.kernel) {
				continue
			}
			b.Run(name+"/"+l.kernel, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					s, err := m.Create(context.Background(), "bench", sessions.CreateOptions{Kernel: l.kernel})
					if err != nil {
						b.Fatal(err)
					}
					answered(b, s.First(), l.code, l.want)
					b.StopTimer()
					m.Delete(context.Background(), "bench", s.ID())
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkLanguageNewContext measures the first result in a new context
// of each language, in a session that runs already: the wait of a
// request naming a language the session has not used yet.
func BenchmarkLanguageNewContext(b *testing.B) {
	for name, rt := range benchRuntimes(b) {
		m, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close(context.Background()) })
		s, err := m.Create(context.Background(), "bench", sessions.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range benchLanguages {
			if !installed(m, l.kernel) {
				continue
			}
			b.Run(name+"/"+l.kernel, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					c, err := s.Contexts().Create(context.Background(), l.kernel, "")
					if err != nil {
						b.Fatal(err)
					}
					cs, err := s.Contexts().Get(c.ID)
					if err != nil {
						b.Fatal(err)
					}
					answered(b, cs, l.code, l.want)
					b.StopTimer()
					if err := s.Contexts().Delete(context.Background(), c.ID); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkLanguageIdleMemory reports the resident memory of a session
// whose only kernel is each language, idle after its first result (every
// process of the sandbox's host uid).
func BenchmarkLanguageIdleMemory(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs per-sandbox uids (root)")
	}
	for name, rt := range benchRuntimes(b) {
		m, err := sessions.New(sessions.Config{}, rt, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close(context.Background()) })
		for _, l := range benchLanguages {
			if !installed(m, l.kernel) {
				continue
			}
			b.Run(name+"/"+l.kernel, func(b *testing.B) {
				var mib float64
				for i := 0; i < b.N; i++ {
					s, err := m.Create(context.Background(), "bench", sessions.CreateOptions{Kernel: l.kernel})
					if err != nil {
						b.Fatal(err)
					}
					answered(b, s.First(), l.code, l.want)
					time.Sleep(300 * time.Millisecond)
					mib = rssMiB(b, s.Workspace())
					m.Delete(context.Background(), "bench", s.ID())
				}
				b.ReportMetric(mib, "idle-MiB")
			})
		}
	}
}
