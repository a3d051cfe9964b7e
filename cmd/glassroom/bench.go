package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/loadgen"
)

const benchUsage = `usage: glassroom bench [flags] TARGET...

Runs the load harness: --sessions kernels per target, each executing
--cell back to back for --duration, and prints exec/s and latency
percentiles side by side. A TARGET is
  glassroom=URL        glassroom's native API (key: --api-key or GLASSROOM_API_KEY)
  glassroom-api=URL    glassroom's Jupyter Server kernels API (/api)
  jupyter=URL          a Jupyter server's kernels API (token: --jupyter-token)
A KIND may carry a tag for --goals' table: glassroom@exec'd=URL.
--sessions takes a comma-separated list to run each target at several sizes.

With --goals it measures the speed goals instead, on targets that listen on
this machine's loopback (it reads their CPU and the machine's memory from
/proc): a new session's first analysis cell (from the warm pool, and cold),
sustained creation, memory per idle session with the analysis stack
imported, and busy sessions running x + 1 and a numpy workload; then it
prints one table, a column per target.
`

type benchOptions struct {
	sessions     []int
	duration     time.Duration
	cell         string
	apiKey       string
	jupyterToken string
	targets      []loadgen.Target
	urls, kinds  []string
	tags         []string // KIND@TAG: a label for --goals ("forked", "exec'd")
	goalsMode    bool
	goals        goalOptions
}

func parseBench(args, env []string, stderr io.Writer) (*benchOptions, error) {
	o := &benchOptions{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	envMap := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	sessions := fs.String("sessions", "10", "kernels per run (a comma-separated list runs several)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measured time per run")
	fs.StringVar(&o.cell, "cell", "x = 1\nx + 1", "the code each kernel runs")
	fs.StringVar(&o.apiKey, "api-key", envMap["GLASSROOM_API_KEY"], "glassroom API key (env GLASSROOM_API_KEY)")
	fs.StringVar(&o.jupyterToken, "jupyter-token", envMap["JUPYTER_TOKEN"], "Jupyter server token (env JUPYTER_TOKEN)")
	fs.BoolVar(&o.goalsMode, "goals", false, "measure the speed goals (see above)")
	fs.IntVar(&o.goals.busySessions, "busy-sessions", 40, "--goals: busy sessions")
	fs.IntVar(&o.goals.idleSessions, "idle-sessions", 100, "--goals: idle sessions whose memory is measured")
	fs.IntVar(&o.goals.creation.Clients, "creation-clients", 8, "--goals: clients creating sessions at once")
	fs.IntVar(&o.goals.creation.Sessions, "creation-sessions", 60, "--goals: sessions created in the creation run")
	fs.IntVar(&o.goals.samples, "samples", 8, "--goals: first cells measured, one at a time")
	fs.DurationVar(&o.goals.settle, "settle", 10*time.Second, "--goals: how long idle sessions sit before their memory is read")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.goals.duration = o.duration
	if o.goals.busySessions < 1 || o.goals.idleSessions < 1 || o.goals.creation.Clients < 1 || o.goals.creation.Sessions < 1 || o.goals.samples < 1 {
		return nil, errors.New("--busy-sessions, --idle-sessions, --creation-clients, --creation-sessions and --samples must be positive")
	}
	for _, s := range strings.Split(*sessions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--sessions: %q is not a positive number", s)
		}
		o.sessions = append(o.sessions, n)
	}
	for _, a := range fs.Args() {
		kind, url, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(url, "http") {
			return nil, fmt.Errorf("target %q: want KIND=http://host:port", a)
		}
		url = strings.TrimRight(url, "/")
		kind, tag, _ := strings.Cut(kind, "@")
		o.urls, o.kinds, o.tags = append(o.urls, url), append(o.kinds, kind), append(o.tags, tag)
		switch kind {
		case "glassroom":
			o.targets = append(o.targets, loadgen.Native{BaseURL: url, Key: o.apiKey})
		case "glassroom-api":
			o.targets = append(o.targets, loadgen.Jupyter{BaseURL: url, Token: o.apiKey, Label: "glassroom /api " + url})
		case "jupyter":
			o.targets = append(o.targets, loadgen.Jupyter{BaseURL: url, Token: o.jupyterToken})
		default:
			return nil, fmt.Errorf("target %q: kind must be glassroom, glassroom-api or jupyter", a)
		}
	}
	if len(o.targets) == 0 {
		fs.Usage()
		return nil, errors.New("no target")
	}
	return o, nil
}

// runBench runs every target at every size and prints one table.
func runBench(ctx context.Context, args, env []string, stdout io.Writer) error {
	o, err := parseBench(args, env, stdout)
	if err != nil {
		return err
	}
	if o.goalsMode {
		return runGoals(ctx, o, stdout)
	}
	var results []loadgen.Result
	for _, n := range o.sessions {
		for _, t := range o.targets {
			fmt.Fprintf(stdout, "bench: %s, %d sessions, %v ...\n", t.Name(), n, o.duration)
			r, err := loadgen.Run(ctx, t, loadgen.Config{Sessions: n, Duration: o.duration, Code: o.cell})
			if err != nil {
				return fmt.Errorf("bench %s: %w", t.Name(), err)
			}
			results = append(results, r)
		}
	}
	fmt.Fprintln(stdout)
	return loadgen.WriteTable(stdout, results)
}
