package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// openAll opens n kernels on t, 4 at a time, and runs then (when non-nil)
// on each as soon as it is open. It returns every kernel it opened (nil
// where one failed), which the caller must closeAll, and an error naming
// how many opens (or thens) failed.
func openAll(ctx context.Context, t Target, n int, then func(Conn) error) ([]Conn, error) {
	conns := make([]Conn, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := t.Open(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			conns[i] = c
			if then != nil {
				errs[i] = then(c)
			}
		}()
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed > 0 {
		return conns, fmt.Errorf("loadgen: %d of %d kernels failed to open or to start: %w", failed, n, errors.Join(errs...))
	}
	return conns, nil
}

// closeAll closes every non-nil conn, 4 at a time, each within 30 s.
func closeAll(conns []Conn) {
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = c.Close(ctx)
		}()
	}
	wg.Wait()
}

// CreationConfig is a creation run: Clients clients open Sessions kernels
// in all, each client one after the other, and run Code once in each.
type CreationConfig struct {
	Clients  int    // default 8
	Sessions int    // default 60
	Code     string // default "1 + 1"
	// Meter, when set, is read as the run starts and ends (the kernels'
	// CPU of a start: CreationResult.CPU).
	Meter Meter
}

// CreationResult is how fast kernels were created and answered.
type CreationResult struct {
	Target            string
	Clients, Sessions int
	Errors            int
	Elapsed           time.Duration
	PerSec            float64 // sessions created and answered per second
	// P50 and P90 of one session's create → first result.
	P50, P90 time.Duration
	// CPU spent during the run, when CreationConfig.Meter is set (the
	// sessions' closing is not in it).
	CPU CPU
}

// KernelCPUPerStart is the CPU the machine spent besides the server and
// the client, per session created: what a kernel's start costs.
func (r CreationResult) KernelCPUPerStart() time.Duration {
	if n := r.Sessions - r.Errors; n > 0 {
		return r.CPU.Kernels() / time.Duration(n)
	}
	return 0
}

// ServerCPUPerStart is the server's CPU per session created.
func (r CreationResult) ServerCPUPerStart() time.Duration {
	if n := r.Sessions - r.Errors; n > 0 {
		return r.CPU.Server / time.Duration(n)
	}
	return 0
}

// Creation measures sustained creation: the kernels stay open until the
// run ends (as a service's sessions do), then are closed, untimed. It
// fails when no kernel could be created.
func Creation(ctx context.Context, t Target, cfg CreationConfig) (CreationResult, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.Sessions <= 0 {
		cfg.Sessions = 60
	}
	if cfg.Code == "" {
		cfg.Code = "1 + 1"
	}
	conns := make([]Conn, cfg.Sessions)
	lat := make([]time.Duration, cfg.Sessions)
	errs := make([]error, cfg.Sessions)
	next := make(chan int, cfg.Sessions)
	for i := range cfg.Sessions {
		next <- i
	}
	close(next)
	var before CPU
	if cfg.Meter != nil {
		var err error
		if before, err = cfg.Meter.Read(); err != nil {
			return CreationResult{}, err
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				c, err := t.Open(ctx)
				if err != nil {
					errs[i] = err
					continue
				}
				conns[i] = c
				if _, err := c.Execute(ctx, cfg.Code); err != nil {
					errs[i] = err
					continue
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var cpu CPU
	if cfg.Meter != nil {
		after, err := cfg.Meter.Read()
		if err != nil {
			closeAll(conns)
			return CreationResult{}, err
		}
		cpu = after.Sub(before)
	}
	closeAll(conns)
	r := CreationResult{Target: t.Name(), Clients: cfg.Clients, Sessions: cfg.Sessions, Elapsed: elapsed, CPU: cpu}
	var ok []time.Duration
	for i, err := range errs {
		if err != nil {
			r.Errors++
			continue
		}
		ok = append(ok, lat[i])
	}
	if len(ok) == 0 {
		return r, fmt.Errorf("loadgen: no kernel was created: %w", errors.Join(errs...))
	}
	r.PerSec = float64(len(ok)) / elapsed.Seconds()
	r.P50, r.P90 = percentile(ok, 0.5), percentile(ok, 0.9)
	return r, nil
}

// FirstCellConfig is a first-cell run: Samples times, one at a time, a new
// kernel is opened and runs Code; Ready (optional) is awaited, untimed,
// before each sample (for a warm pool to refill).
type FirstCellConfig struct {
	Samples int // default 8
	Code    string
	Ready   func(context.Context) error
}

// Latency is a set of samples' percentiles.
type Latency struct {
	Target   string
	Samples  int
	P50, P90 time.Duration
}

// FirstCell measures a new session's create → Code's end, one at a time.
func FirstCell(ctx context.Context, t Target, cfg FirstCellConfig) (Latency, error) {
	if cfg.Samples <= 0 {
		cfg.Samples = 8
	}
	if cfg.Code == "" {
		return Latency{}, errors.New("loadgen: first cell: no code")
	}
	lat := make([]time.Duration, 0, cfg.Samples)
	for range cfg.Samples {
		if cfg.Ready != nil {
			if err := cfg.Ready(ctx); err != nil {
				return Latency{}, fmt.Errorf("loadgen: first cell: %w", err)
			}
		}
		t0 := time.Now()
		c, err := t.Open(ctx)
		if err != nil {
			return Latency{}, fmt.Errorf("loadgen: first cell: %w", err)
		}
		_, err = c.Execute(ctx, cfg.Code)
		d := time.Since(t0)
		closeAll([]Conn{c})
		if err != nil {
			return Latency{}, fmt.Errorf("loadgen: first cell: %w", err)
		}
		lat = append(lat, d)
	}
	return Latency{Target: t.Name(), Samples: len(lat), P50: percentile(lat, 0.5), P90: percentile(lat, 0.9)}, nil
}

// IdleConfig is a memory run: Sessions kernels opened (4 at a time), Code
// run once in each, then Settle waited before the machine's memory in use
// is read again. Ready (optional) is awaited before each reading (for a
// warm pool to be full both times).
type IdleConfig struct {
	Sessions int
	Code     string
	Settle   time.Duration // default 10 s
	Ready    func(context.Context) error
}

// IdleMemory returns the machine's memory in use per idle kernel: the
// growth of MemTotal - MemAvailable over cfg.Sessions kernels (so shared
// pages count once, and everything a session costs the machine counts:
// its sandbox, the server's share, the kernel's page tables).
func IdleMemory(ctx context.Context, t Target, m ProcMeter, cfg IdleConfig) (int64, error) {
	if cfg.Settle <= 0 {
		cfg.Settle = 10 * time.Second
	}
	if cfg.Sessions <= 0 {
		return 0, errors.New("loadgen: idle memory: no sessions")
	}
	ready := func() error {
		if cfg.Ready == nil {
			return nil
		}
		if err := cfg.Ready(ctx); err != nil {
			return fmt.Errorf("loadgen: idle memory: %w", err)
		}
		return nil
	}
	if err := ready(); err != nil {
		return 0, err
	}
	before, err := m.MemoryInUse()
	if err != nil {
		return 0, err
	}
	var then func(Conn) error
	if cfg.Code != "" {
		then = func(c Conn) error { _, err := c.Execute(ctx, cfg.Code); return err }
	}
	conns, err := openAll(ctx, t, cfg.Sessions, then)
	defer closeAll(conns)
	if err != nil {
		return 0, fmt.Errorf("loadgen: idle memory: %w", err)
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(cfg.Settle):
	}
	if err := ready(); err != nil {
		return 0, err
	}
	after, err := m.MemoryInUse()
	if err != nil {
		return 0, err
	}
	return (after - before) / int64(cfg.Sessions), nil
}
