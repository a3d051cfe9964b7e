package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/loadgen"
)

// The goals of the speed issue, measured side by side against every
// target (glassroom's runtimes and a Jupyter server) on this machine.

// analysisCell is the first cell of almost every code-interpreter
// conversation: the analysis stack, a DataFrame and a plot whose PNG comes
// back (the same cell as sessions' BenchmarkFirstAnalysisCell).
const analysisCell = `import numpy as np, pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame({"x": np.arange(100)})
plt.plot(df.x, np.sqrt(df.x))
plt.show()`

// numpyCell is the second busy workload: numpy on a 500×500 array and a
// small PNG plot.
const numpyCell = `import numpy as np, matplotlib.pyplot as plt
a = np.random.default_rng(1).random((500, 500))
s = (a @ a.T).trace()
fig, ax = plt.subplots(figsize=(2, 2), dpi=50)
ax.plot(a[0, :50])
plt.show()`

const importStack = "import numpy, pandas, matplotlib.pyplot"

type goalOptions struct {
	busySessions int
	idleSessions int
	creation     loadgen.CreationConfig
	samples      int
	duration     time.Duration
	settle       time.Duration
}

// goalTarget is one server to measure, with what the goals need to know
// of it.
type goalTarget struct {
	label  string // "glassroom local", "jupyter_server"
	t      loadgen.Target
	cold   loadgen.Target // glassroom: the same server, bypassing its pool
	health string         // glassroom: /healthz, for the pool
	meter  loadgen.ProcMeter
	// jupyter: a Jupyter server, the baseline
	jupyter bool
	// pooled: glassroom with a warm pool
	pooled bool
}

// goalFigures is what was measured of one target.
type goalFigures struct {
	firstPool, firstCold loadgen.Latency
	creation             loadgen.CreationResult
	idleBytes            int64
	busy, numpy          loadgen.Result
	errs                 []string
}

func newGoalTarget(ctx context.Context, t loadgen.Target, kind, tag, base string) (goalTarget, error) {
	g := goalTarget{t: t, label: t.Name(), jupyter: kind == "jupyter"}
	if g.jupyter {
		g.label = "jupyter_server"
	}
	u, err := url.Parse(base)
	if err != nil {
		return g, fmt.Errorf("target %s: %w", base, err)
	}
	port, _ := strconv.Atoi(u.Port())
	if !isLoopback(u.Host) || port == 0 {
		return g, fmt.Errorf("target %s: --goals measures this machine: the URL must be a loopback address with a port", base)
	}
	if g.meter.ServerPID, err = g.meter.ListenerPID(port); err != nil {
		return g, err
	}
	if n, ok := t.(loadgen.Native); ok {
		g.health = base + "/healthz"
		var h healthz
		if err := getHealth(ctx, g.health, &h); err != nil {
			return g, err
		}
		g.label = "glassroom " + h.Runtime
		if tag != "" {
			g.label += " (" + tag + ")"
		}
		g.pooled = h.Pool.Target > 0
		n.Cold = true
		g.cold = n
	}
	return g, nil
}

type healthz struct {
	Runtime string
	Pool    struct{ Target, Ready, Starting int }
}

func getHealth(ctx context.Context, u string, h *healthz) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: status %d", resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(h)
}

// poolFull waits until the server's warm pool is full and no kernel is
// starting (so that a refill does not share the CPU with the sample).
func (g goalTarget) poolFull(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var h healthz
		if err := getHealth(ctx, g.health, &h); err != nil {
			return err
		}
		if h.Pool.Target == 0 {
			return nil // no pool to wait for
		}
		if h.Pool.Ready >= h.Pool.Target && h.Pool.Starting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the pool did not fill: %+v", h.Pool)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// measure runs every goal's measurement on g, one after the other; a
// failed measurement is noted and the rest still run.
func (o goalOptions) measure(ctx context.Context, g goalTarget, progress io.Writer) goalFigures {
	var f goalFigures
	note := func(what string, err error) {
		if err != nil {
			f.errs = append(f.errs, what+": "+err.Error())
			fmt.Fprintf(progress, "bench: %s: %s: %v\n", g.label, what, err)
		}
	}
	step := func(what string) { fmt.Fprintf(progress, "bench: %s: %s ...\n", g.label, what) }
	var err error
	if g.cold != nil {
		if g.pooled {
			step("first analysis cell from the pool")
			f.firstPool, err = loadgen.FirstCell(ctx, g.t, loadgen.FirstCellConfig{Samples: o.samples, Code: analysisCell, Ready: g.poolFull})
			note("first cell from the pool", err)
		}
		step("first analysis cell, cold")
		f.firstCold, err = loadgen.FirstCell(ctx, g.cold, loadgen.FirstCellConfig{Samples: o.samples, Code: analysisCell, Ready: g.poolFull})
		note("first cell, cold", err)
	} else {
		step("first analysis cell")
		f.firstCold, err = loadgen.FirstCell(ctx, g.t, loadgen.FirstCellConfig{Samples: o.samples, Code: analysisCell})
		note("first cell", err)
	}
	step(fmt.Sprintf("creation, %d clients, %d sessions", o.creation.Clients, o.creation.Sessions))
	if g.cold != nil {
		note("creation", g.poolFull(ctx))
	}
	creation := o.creation
	creation.Meter = g.meter
	f.creation, err = loadgen.Creation(ctx, g.t, creation)
	note("creation", err)
	step(fmt.Sprintf("idle memory, %d sessions with %q", o.idleSessions, importStack))
	idle := loadgen.IdleConfig{Sessions: o.idleSessions, Code: importStack, Settle: o.settle}
	if g.cold != nil {
		idle.Ready = g.poolFull
	}
	f.idleBytes, err = loadgen.IdleMemory(ctx, g.t, g.meter, idle)
	note("idle memory", err)
	step(fmt.Sprintf("%d busy sessions, x + 1, %v", o.busySessions, o.duration))
	f.busy, err = loadgen.Run(ctx, g.t, loadgen.Config{Sessions: o.busySessions, Duration: o.duration, Meter: g.meter})
	note("busy x + 1", err)
	step(fmt.Sprintf("%d busy sessions, numpy 500×500 and a plot, %v", o.busySessions, o.duration))
	f.numpy, err = loadgen.Run(ctx, g.t, loadgen.Config{Sessions: o.busySessions, Duration: o.duration, Code: numpyCell, Warmup: 2, Meter: g.meter})
	note("busy numpy", err)
	return f
}

// runGoals measures every target and prints the goals table.
func runGoals(ctx context.Context, o *benchOptions, stdout io.Writer) error {
	var targets []goalTarget
	for i, t := range o.targets {
		g, err := newGoalTarget(ctx, t, o.kinds[i], o.tags[i], o.urls[i])
		if err != nil {
			return fmt.Errorf("bench --goals: %w", err)
		}
		targets = append(targets, g)
	}
	figs := make([]goalFigures, len(targets))
	for i, g := range targets {
		figs[i] = o.goals.measure(ctx, g, stdout)
	}
	fmt.Fprintln(stdout)
	return writeGoals(stdout, o.goals, targets, figs)
}

// writeGoals prints one row per goal, a column per target.
func writeGoals(w io.Writer, o goalOptions, targets []goalTarget, figs []goalFigures) error {
	var b strings.Builder
	b.WriteString("| goal | target |")
	for _, t := range targets {
		b.WriteString(" " + t.label + " |")
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", len(targets)) + "\n")
	ms := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
	jupyter := -1
	for i, t := range targets {
		if t.jupyter {
			jupyter = i
		}
	}
	row := func(goal, target string, cell func(i int) string) {
		b.WriteString("| " + goal + " | " + target + " |")
		for i := range targets {
			b.WriteString(" " + cell(i) + " |")
		}
		b.WriteString("\n")
	}
	row("first analysis cell from the pool, p50 / p90", "≤ 150 ms p50", func(i int) string {
		if !targets[i].pooled {
			return "no pool"
		}
		return ms(figs[i].firstPool.P50) + " / " + ms(figs[i].firstPool.P90)
	})
	row("first analysis cell, cold (a Jupyter target: a new kernel as it gives one), p50 / p90", "≤ 600 ms p50", func(i int) string {
		return ms(figs[i].firstCold.P50) + " / " + ms(figs[i].firstCold.P90)
	})
	row(fmt.Sprintf("creation + `1 + 1`, %d clients, %d sessions", o.creation.Clients, o.creation.Sessions), "≥ 15/s local, ≥ 8/s docker", func(i int) string {
		c := figs[i].creation
		return fmt.Sprintf("%.1f/s (p50 %s)", c.PerSec, ms(c.P50))
	})
	row("… kernel CPU per start (server's)", "reported", func(i int) string {
		c := figs[i].creation
		return fmt.Sprintf("%.0f ms (%.0f ms)", float64(c.KernelCPUPerStart())/1e6, float64(c.ServerCPUPerStart())/1e6)
	})
	row(fmt.Sprintf("memory per idle session with numpy, pandas, matplotlib (%d sessions)", o.idleSessions), "≤ 30 MiB", func(i int) string {
		return fmt.Sprintf("%.1f MiB", float64(figs[i].idleBytes)/(1<<20))
	})
	row(fmt.Sprintf("%d busy sessions, `x + 1`: exec/s (× jupyter_server)", o.busySessions), "≥ 3×", func(i int) string {
		s := fmt.Sprintf("%.0f", figs[i].busy.PerSec)
		if jupyter >= 0 && i != jupyter && figs[jupyter].busy.PerSec > 0 {
			s += fmt.Sprintf(" (%.2f×)", figs[i].busy.PerSec/figs[jupyter].busy.PerSec)
		}
		return s
	})
	row("… p50 / p99 (p99/p50)", "p99 ≤ 2 × p50", func(i int) string {
		r := figs[i].busy
		return fmt.Sprintf("%s / %s (%.1f)", ms(r.P50), ms(r.P99), float64(r.P99)/float64(max(r.P50, 1)))
	})
	row("… kernel CPU per `x + 1` (server's)", "≤ 1.0 ms", func(i int) string {
		r := figs[i].busy
		return fmt.Sprintf("%.2f ms (%.2f ms)", float64(r.KernelCPUPerExec())/1e6, float64(r.ServerCPUPerExec())/1e6)
	})
	row(fmt.Sprintf("%d busy sessions, numpy 500×500 + plot: exec/s, p50 / p99", o.busySessions), "reported", func(i int) string {
		r := figs[i].numpy
		return fmt.Sprintf("%.0f, %s / %s", r.PerSec, ms(r.P50), ms(r.P99))
	})
	row("… kernel CPU per execution", "reported", func(i int) string {
		return fmt.Sprintf("%.1f ms", float64(figs[i].numpy.KernelCPUPerExec())/1e6)
	})
	for i, f := range figs {
		for _, e := range f.errs {
			fmt.Fprintf(&b, "\n%s: %s", targets[i].label, e)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
