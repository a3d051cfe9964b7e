package loadgen

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Target creates kernels to drive: a gateway and the protocol to speak.
type Target interface {
	// Name labels the target in results.
	Name() string
	// Open creates a kernel and connects to it. The caller must Close it.
	Open(ctx context.Context) (Conn, error)
}

// Conn is one connected kernel. Its methods are called by one goroutine.
type Conn interface {
	// Execute runs code and returns when the kernel has finished it (its
	// reply and the end of its output), with the time the server reports
	// the execution took inside it (0 when the protocol does not say).
	Execute(ctx context.Context, code string) (server time.Duration, err error)
	// Close disconnects and deletes the kernel.
	Close(ctx context.Context) error
}

// Config is one run: Sessions kernels, each executing Code back to back
// for Duration, after Warmup executions each that are not measured.
type Config struct {
	Sessions int
	Duration time.Duration
	Warmup   int
	Code     string
	// Meter, when set, is read as the measured window opens and closes;
	// Result.CPU is the difference.
	Meter Meter
}

// Meter reads cumulative CPU times (ProcMeter on Linux).
type Meter interface {
	Read() (CPU, error)
}

func (c Config) withDefaults() Config {
	if c.Sessions == 0 {
		c.Sessions = 10
	}
	if c.Duration == 0 {
		c.Duration = 20 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 5
	}
	if c.Code == "" {
		c.Code = "x = 1\nx + 1"
	}
	return c
}

// Result summarises a run.
type Result struct {
	Target   string
	Sessions int
	Execs    int
	Errors   int
	Elapsed  time.Duration
	PerSec   float64
	P50      time.Duration
	P90      time.Duration
	P99      time.Duration
	Max      time.Duration
	// WorstP99 is the highest p99 of any one session; Fairness is WorstP99
	// over the run's p50 (1 is perfectly fair).
	WorstP99 time.Duration
	Fairness float64
	// ServerP50 and ServerP99 are the execution times the server reports
	// (from the kernel taking the cell to its end), when it does.
	ServerP50, ServerP99 time.Duration
	// CPU spent during the measured window, when Config.Meter is set.
	CPU CPU
}

// KernelCPUPerExec is the kernels' CPU time per execution: what neither
// the server nor the client spent, over the executions.
func (r Result) KernelCPUPerExec() time.Duration {
	if r.Execs == 0 {
		return 0
	}
	return r.CPU.Kernels() / time.Duration(r.Execs)
}

// ServerCPUPerExec is the server's CPU time per execution.
func (r Result) ServerCPUPerExec() time.Duration {
	if r.Execs == 0 {
		return 0
	}
	return r.CPU.Server / time.Duration(r.Execs)
}

// Run opens cfg.Sessions kernels on t (all before measuring), drives them
// concurrently, closes them and returns the figures. It fails if no kernel
// could be opened; execution errors are counted.
func Run(ctx context.Context, t Target, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	conns, err := openAll(ctx, t, cfg.Sessions, nil)
	defer closeAll(conns)
	if err != nil {
		return Result{}, err
	}
	for _, c := range conns { // warm-up, unmeasured
		for i := 0; i < cfg.Warmup; i++ {
			if _, err := c.Execute(ctx, cfg.Code); err != nil {
				return Result{}, fmt.Errorf("loadgen: warm-up: %w", err)
			}
		}
	}
	lat := make([][]time.Duration, len(conns))
	srv := make([][]time.Duration, len(conns))
	failed := make([]int, len(conns))
	var before CPU
	if cfg.Meter != nil {
		var err error
		if before, err = cfg.Meter.Read(); err != nil {
			return Result{}, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				t0 := time.Now()
				s, err := c.Execute(rctx, cfg.Code)
				if err != nil {
					if rctx.Err() == nil {
						failed[i]++
					}
					continue
				}
				lat[i] = append(lat[i], time.Since(t0))
				if s > 0 {
					srv[i] = append(srv[i], s)
				}
			}
		}()
	}
	wg.Wait()
	r := summarise(t.Name(), lat, srv, failed, time.Since(start))
	if cfg.Meter != nil {
		after, err := cfg.Meter.Read()
		if err != nil {
			return Result{}, err
		}
		r.CPU = after.Sub(before)
	}
	return r, nil
}

func summarise(name string, lat, srv [][]time.Duration, failed []int, elapsed time.Duration) Result {
	r := Result{Target: name, Sessions: len(lat), Elapsed: elapsed}
	var all, server []time.Duration
	for i, l := range lat {
		all = append(all, l...)
		server = append(server, srv[i]...)
		r.Errors += failed[i]
		if p := percentile(l, 0.99); p > r.WorstP99 {
			r.WorstP99 = p
		}
	}
	r.Execs = len(all)
	r.PerSec = float64(r.Execs) / elapsed.Seconds()
	r.P50, r.P90, r.P99, r.Max = percentile(all, 0.50), percentile(all, 0.90), percentile(all, 0.99), percentile(all, 1)
	r.ServerP50, r.ServerP99 = percentile(server, 0.50), percentile(server, 0.99)
	if r.P50 > 0 {
		r.Fairness = float64(r.WorstP99) / float64(r.P50)
	}
	return r
}

// percentile returns the q-quantile of d (it sorts d).
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(q*float64(len(d))+0.5) - 1
	return d[min(max(i, 0), len(d)-1)]
}

// WriteTable prints results side by side, one row per run.
func WriteTable(w io.Writer, rs []Result) error {
	var b strings.Builder
	b.WriteString("| target | sessions | exec/s | p50 | p90 | p99 | worst session p99 | p99/p50 | in-server p50/p99 | errors |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
	for _, r := range rs {
		srv := "-"
		if r.ServerP50 > 0 {
			srv = ms(r.ServerP50) + " / " + ms(r.ServerP99)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s | %.1f | %s | %d |\n",
			r.Target, r.Sessions, r.PerSec, ms(r.P50), ms(r.P90), ms(r.P99), ms(r.WorstP99), float64(r.P99)/float64(max(r.P50, 1)), srv, r.Errors)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
