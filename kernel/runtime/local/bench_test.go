package local_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/runtimetest"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/testkit"
	"github.com/rs/zerolog"
)

// BenchmarkKernelStart starts a sandbox per kernel of the language table
// and reports, per start: start-ms (Start returned: the kernel's sockets
// are there), first-result-ms (from the start's beginning to the result of
// the first `x + 1`: what a client waits for), and, as root, rss-MB (the
// resident memory of every process of the idle sandbox: bwrap, the
// launcher, the kernel) and pss-MB (the same counting shared pages once
// per sandbox sharing them). ns/op is first-result.
//
//	go test -run '^$' -bench BenchmarkKernelStart -benchtime 5x ./kernel/runtime/local/
func BenchmarkKernelStart(b *testing.B) {
	r, err := local.New(local.Config{Common: sandbox.Common{StateDir: benchStateDir(b), UIDBase: testkit.UIDBase(b)}}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	installed := map[string]bool{}
	for _, k := range r.Installed() {
		installed[k.Name] = true
	}
	for _, lang := range runtimetest.Languages() {
		b.Run(lang.Kernel, func(b *testing.B) {
			if !installed[lang.Kernel] {
				b.Skipf("%s is not installed", lang.Kernel)
			}
			var startMS, firstMS, rss, pss float64
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				t0 := time.Now()
				sb, err := r.Start(ctx, sandbox.Spec{ID: "bench-" + lang.Kernel + "-" + strconv.Itoa(i), Kernel: lang.Kernel})
				if err != nil {
					cancel()
					b.Fatal(err)
				}
				started := time.Since(t0)
				c, err := kernel.Dial(ctx, sb.Connection(), kernel.Config{}, zerolog.Nop())
				if err == nil {
					_, err = c.Execute(ctx, lang.Set+"\n"+lang.Get, kernel.ExecuteOptions{}, nil)
				}
				first := time.Since(t0)
				if err != nil {
					cancel()
					b.Fatal(err)
				}
				if os.Geteuid() == 0 {
					r1, p1 := sandboxMemory(b, sb, i == 0)
					rss += r1
					pss += p1
				}
				startMS += float64(started.Milliseconds())
				firstMS += float64(first.Milliseconds())
				_ = c.Close()
				_ = sb.Close(context.Background())
				cancel()
			}
			n := float64(b.N)
			b.ReportMetric(startMS/n, "start-ms")
			b.ReportMetric(firstMS/n, "first-result-ms")
			if rss > 0 {
				b.ReportMetric(rss/n, "rss-MB")
				b.ReportMetric(pss/n, "pss-MB")
			}
		})
	}
}

// sandboxMemory sums the resident and proportional memory (MB) of the
// sandbox's processes (its uid's).
func sandboxMemory(b *testing.B, sb sandbox.Sandbox, log bool) (rss, pss float64) {
	var st syscall.Stat_t
	if err := syscall.Stat(sb.Workspace(), &st); err != nil {
		b.Fatal(err)
	}
	for _, pid := range livePids(st.Uid) {
		body, err := os.ReadFile("/proc/" + pid + "/smaps_rollup")
		if err != nil {
			continue
		}
		if log {
			comm, _ := os.ReadFile("/proc/" + pid + "/comm")
			for _, line := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(line, "Rss:") || strings.HasPrefix(line, "Pss:") {
					b.Logf("%s %s", strings.TrimSpace(string(comm)), strings.Join(strings.Fields(line), " "))
				}
			}
		}
		for _, line := range strings.Split(string(body), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "Rss:":
				rss += kb / 1024
			case "Pss:":
				pss += kb / 1024
			}
		}
	}
	return rss, pss
}

func benchStateDir(b *testing.B) string {
	d := b.TempDir()
	for p := d; p != os.TempDir() && p != "/"; p = p[:strings.LastIndexByte(p, '/')] {
		os.Chmod(p, 0o711)
	}
	return d
}
